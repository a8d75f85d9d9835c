"""Perturbed answers shaped like each channel's own: an MCP `isError` result, an HTTP
status with a realistic body (and `Retry-After` where a real service sends one), a
shell command's non-zero exit with its stderr, a browser navigation error. Pure
functions of the call, the perturbation and the session's history."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from http import HTTPStatus
from typing import Any

from backends.browser.page_state import PageState
from backends.http.messages import encode_body, observation_of, render_response, response_record
from backends.shell.screen import ShellResult, last_cwd
from calls import Call, Observation, Perturbation, Provenance, Turn


def fault_observation(
    call: Call, perturbation: Perturbation, history: Sequence[Turn], *, latency_s: float = 0.0
) -> Observation:
    """What the agent gets for a faulted call on its channel (provenance `none`)."""
    if call.channel == "http":
        return observation_of(_http_fault(perturbation), Provenance.NONE, latency_s=latency_s)
    if call.channel == "shell":
        result = _shell_fault(call, perturbation, last_cwd(history))
        return Observation(
            [{"type": "text", "text": result.text()}], Provenance.NONE, result.is_error, result.structured(), latency_s
        )
    if call.channel == "browser":
        state = PageState(url=None, title=None, snapshot=None, error=_browser_error(call, perturbation))
        return Observation([{"type": "text", "text": state.text()}], Provenance.NONE, True, None, latency_s)
    return Observation.error(_mcp_message(call, perturbation), Provenance.NONE, latency_s)


def _status(perturbation: Perturbation) -> int:
    if perturbation.kind == "rate_limit":
        return 429
    if perturbation.kind == "timeout":
        return 504
    return perturbation.status or 503


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _retry_after(perturbation: Perturbation) -> str | None:
    if perturbation.retry_after_s is None:
        return None
    return str(max(1, round(perturbation.retry_after_s)))  # Retry-After is whole seconds


def _http_fault(perturbation: Perturbation) -> dict[str, Any]:
    status = _status(perturbation)
    message = perturbation.message or {
        429: "Too many requests: rate limit exceeded",
        504: "The upstream server did not respond in time",
    }.get(status, _phrase(status))
    headers = [("Content-Type", "application/json")]
    retry_after = _retry_after(perturbation)
    if retry_after is not None:
        headers.append(("Retry-After", retry_after))
    if perturbation.kind == "rate_limit" and perturbation.limit is not None:
        headers += [("X-RateLimit-Limit", str(perturbation.limit)), ("X-RateLimit-Remaining", "0")]
    body = json.dumps({"error": {"code": status, "message": message}}).encode()
    return response_record(status, "", headers, encode_body(body, limit=len(body)), decoded=False)


def _shell_fault(call: Call, perturbation: Perturbation, cwd: str | None) -> ShellResult:
    if perturbation.kind == "timeout":
        return ShellResult(output="", exit_code=None, cwd=cwd, timed_out=True)
    words = str(call.arguments.get("command") or "").split()
    program = words[0] if words else "bash"  # the command's own program says it failed, as a shell shows it
    if perturbation.kind == "rate_limit":
        message = (
            perturbation.message or f"{program}: rate limit exceeded; try again in {_retry_after(perturbation)} seconds"
        )
    else:
        message = perturbation.message or f"{program}: Resource temporarily unavailable"
    return ShellResult(output=message + "\n", exit_code=perturbation.exit_code, cwd=cwd)


def _browser_error(call: Call, perturbation: Perturbation) -> str:
    where = f" at {call.arguments['url']}" if isinstance(call.arguments.get("url"), str) else ""
    if perturbation.message:
        return perturbation.message
    if perturbation.kind == "timeout":
        return f"page.goto: Timeout {max(1, round(perturbation.delay_s * 1000))}ms exceeded.{where}"
    if perturbation.kind == "rate_limit":
        return f"page.goto: net::ERR_HTTP_RESPONSE_CODE_FAILURE (429 Too Many Requests){where}"
    return f"page.goto: net::ERR_CONNECTION_RESET{where}"


def _mcp_message(call: Call, perturbation: Perturbation) -> str:
    if perturbation.message:
        return perturbation.message
    if perturbation.kind == "timeout":
        return f"Request timed out: {call.server} did not answer {call.tool}"
    if perturbation.kind == "rate_limit":
        return (
            f"Rate limit exceeded for {call.tool}: too many requests; retry after {_retry_after(perturbation)} seconds"
        )
    status = _status(perturbation)
    return f"Error executing tool {call.tool}: {status} {_phrase(status)}"


# --- empty and truncate: the answer, changed ---------------------------------------------


def shaped_observation(call: Call, perturbation: Perturbation, observation: Observation) -> Observation:
    """The route's answer emptied (`keep` 0) or cut to its `keep` share, in the
    channel's shape; provenance `none` (simroute changed it)."""
    keep = perturbation.keep
    structured = observation.structured
    if call.channel == "http" and isinstance(structured, dict) and "status" in structured:
        body = _cut_text(str(structured.get("body") or ""), keep) if structured.get("body_encoding") == "text" else ""
        data = body.encode()
        cut = {**structured, "body": body, "body_encoding": "text", "body_size": len(data), "truncated": False}
        cut.pop("body_sha256", None)
        return replace(
            observation,
            content=[{"type": "text", "text": render_response(cut)}],
            structured=cut,
            provenance=Provenance.NONE,
        )
    if call.channel == "shell" and isinstance(structured, dict) and "output" in structured:
        result = ShellResult.from_structured(
            {**structured, "output": _cut_text(str(structured.get("output") or ""), keep)}
        )
        return replace(
            observation,
            content=[{"type": "text", "text": result.text()}],
            structured=result.structured(),
            provenance=Provenance.NONE,
        )
    if call.channel == "browser" and isinstance(structured, dict) and "snapshot" in structured:
        state = PageState.from_structured(
            {**structured, "snapshot": _cut_lines(str(structured.get("snapshot") or ""), keep)}
        )
        return replace(
            observation,
            content=[{"type": "text", "text": state.text()}],
            structured=state.structured(),
            provenance=Provenance.NONE,
        )
    content = [
        {**block, "text": _cut_text(block["text"], keep)} if block.get("type") == "text" else block
        for block in observation.content
    ]
    if keep == 0.0:
        content = [block for block in content if block.get("type") != "text" or block["text"]] or [
            {"type": "text", "text": ""}
        ]
    return replace(
        observation,
        content=content,
        structured=_cut_value(structured, keep) if isinstance(structured, dict) else structured,
        provenance=Provenance.NONE,
    )


def _cut_text(text: str, keep: float) -> str:
    """A JSON text with its lists cut (still valid JSON), else the first `keep` of the text."""
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            value = json.loads(stripped)
        except ValueError:
            pass
        else:
            return json.dumps(_cut_value(value, keep), ensure_ascii=False)
    if keep == 0.0:
        return ""
    return _cut_lines(text, keep)


def _cut_lines(text: str, keep: float) -> str:
    lines = text.splitlines(keepends=True)
    if len(lines) > 1:
        return "".join(lines[: int(len(lines) * keep)])
    return text[: int(len(text) * keep)]


def _cut_value(value: Any, keep: float) -> Any:
    """Lists keep their first `keep` share of items (`keep` 0: empty), at the top level
    and one level into a mapping (`{"items": [...]}`); a mapping without lists has its
    texts cut instead (`{"result": "..."}`, as MCP wraps a text answer)."""
    if isinstance(value, list):
        return value[: int(len(value) * keep)]
    if not isinstance(value, dict):
        return value
    if any(isinstance(item, list) for item in value.values()):
        return {key: item[: int(len(item) * keep)] if isinstance(item, list) else item for key, item in value.items()}
    return {key: _cut_text(item, keep) if isinstance(item, str) else item for key, item in value.items()}
