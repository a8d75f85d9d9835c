"""`empty` and `truncate` on a streamed HTTP body (router/http/real_answers.py): the body
passes through as it arrives, so it is cut as it passes. `empty` sends none of it;
`truncate` sends the first `keep` share of its bytes (as a connection dropped part
way would) when its length is known and it is not content-encoded (a cut gzip
stream is not a shorter body, it is a broken one). Otherwise the cut cannot be
made on a stream, and the record says the perturbation was not applied.

The headers go out before the body: the Content-Length is set to the bytes the
agent will get. What the agent got is captured beside the whole real body, so the
record holds both (the real one as `unperturbed`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from mitmproxy import http

from backends.http.messages import BodyCapture
from calls import Perturbation


def allowed_bytes(response: http.Response, perturbation: Perturbation | None) -> int | None:
    """The bytes of a streamed body the agent gets under `perturbation` (None: no cut
    applies or none can be made on this stream)."""
    if perturbation is None or perturbation.kind not in ("empty", "truncate"):
        return None
    if perturbation.kind == "empty":
        return 0
    length = response.headers.get("content-length", "").strip()
    if not length.isdigit() or response.headers.get("content-encoding", "identity").strip().lower() not in (
        "",
        "identity",
    ):
        return None
    return int(int(length) * perturbation.keep)


@dataclass(slots=True)
class StreamCut:
    """mitmproxy's `response.stream` callable for a cut body: the whole body goes to
    `capture` (the record's real answer), the first `allowed` bytes to the agent (and
    to `sent`, what the record says the agent got)."""

    capture: BodyCapture
    allowed: int
    sent: BodyCapture = field(init=False)

    def __post_init__(self) -> None:
        self.sent = BodyCapture(self.capture.limit)

    def __call__(self, chunk: bytes) -> list[bytes]:
        self.capture(chunk)
        piece = chunk[: max(0, self.allowed - self.sent.size)]
        self.sent(piece)
        return [piece] if piece else []


def cut_stream(response: http.Response, perturbation: Perturbation | None, capture: BodyCapture) -> StreamCut | None:
    """The stream callable cutting `response`'s body, its Content-Length set to match;
    None when no cut applies (the body passes whole)."""
    allowed = allowed_bytes(response, perturbation)
    if allowed is None:
        return None
    if "content-length" in response.headers:
        response.headers["content-length"] = str(allowed)
    return StreamCut(capture, allowed)
