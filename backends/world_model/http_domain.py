"""The HTTP domain: raw HTTP requests as actions, raw HTTP responses as observations.

Action      = the request message: request line, headers, blank line, body
Observation = the response message: status line, headers, blank line, body
History     = this session's earlier exchanges with the same host
Examples    = recorded real exchanges with the same host and method from other
              sessions, the same path (and URL) preferred, best last

A prediction is read back into the structured response of a real one (status,
headers, body); an answer with no HTTP status line is an error response tagged
`sim` that says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from backends.world_model.domain import CountTokens
from backends.world_model.prompt import CLOSING, assemble, omit_oldest, render_observation, size
from backends.http_messages import error_structured, observation_of, parse_response, render_request, render_response
from router.types import Call, Observation, Provenance, Session

TASK = (
    "You are the HTTP server {host}. An AI agent sends it HTTP requests. For each request, predict "
    "exactly the HTTP response the real server sends back: the status line, the response headers, a "
    "blank line and the body, in the server's own format (JSON APIs answer JSON). Stay consistent with "
    "everything this server answered earlier in this session: resources created, changed or deleted."
)
BODY_CHARS = 2000  # response bodies shown in history and examples
_STATUS_LINE = re.compile(r"^HTTP/\d(?:\.\d)? \d{3}\b", re.MULTILINE)

Example = tuple[Call, dict[str, Any]]  # (the request, its structured response)


class HttpDomain:
    def __init__(
        self,
        *,
        demonstrations_for: Callable[[Call], list[Example]] = lambda call: [],
        initial_state: Mapping[str, str] | None = None,
        simulation_instruction: Mapping[str, str] | None = None,
        body_chars: int = BODY_CHARS,
    ) -> None:
        self.demonstrations_for = demonstrations_for
        self.initial_state = dict(initial_state or {})
        self.simulation_instruction = dict(simulation_instruction or {})
        self.body_chars = body_chars

    def system(self, host: str) -> str:
        parts = [TASK.format(host=host), f"## Action space\nHTTP/1.1 requests to {host}, written as raw HTTP messages."]
        if state := self.initial_state.get(host):
            parts.append("## Initial state\n" + state.strip())
        if instruction := self.simulation_instruction.get(host):
            parts.append("## Simulation instruction\n" + instruction.strip())
        return "\n\n".join(parts)

    def render_action(self, call: Call, number: int) -> str:
        return f"### Turn {number}\n**Action:**\n```http\n{render_request(call)}\n```"

    def render_response(self, structured: Mapping[str, Any]) -> str:
        body = structured.get("body")
        if isinstance(body, str) and len(body) > self.body_chars:
            structured = {**structured, "body": body[: self.body_chars] + f"\n[{len(body) - self.body_chars} characters cut]"}
        return render_response(structured)

    def messages(self, call: Call, session: Session, *, budget_tokens: int, count_tokens: CountTokens) -> list[dict[str, str]]:
        turns = [
            (turn.call, turn.observation)
            for turn in session.history
            if turn.call.channel == call.channel and turn.call.server == call.server
        ]
        demonstrations = self.demonstrations_for(call)

        def render_turn(index: int, number: int) -> tuple[str, str]:
            past, observation = turns[index]
            shown = self.render_response(observation.structured) if _is_http(observation.structured) else observation.text
            return self.render_action(past, number), render_observation(shown)

        def render_final(number: int) -> str:
            parts = []
            if demonstrations:
                parts.append(f"Real responses {call.server} gave to similar requests in other sessions:")
                for past, structured in demonstrations:
                    parts.append(f"**Example request:**\n```http\n{render_request(past)}\n```\n" + render_observation(self.render_response(structured)))
            parts.append(self.render_action(call, number))
            parts.append(CLOSING.format(what="HTTP server"))
            return "\n\n".join(parts)

        system = self.system(call.server)
        messages = assemble(system, len(turns), render_turn, render_final, omitted=0)
        if size(messages, count_tokens) <= budget_tokens:
            return messages
        messages, _ = omit_oldest(system, len(turns), render_turn, render_final, budget_tokens=budget_tokens, count_tokens=count_tokens)
        return messages

    def refusal(self, call: Call, session: Session) -> str | None:
        return None

    def output_schema(self, call: Call) -> dict[str, Any] | None:
        return None  # a raw HTTP message is native text

    def observation(self, call: Call, prediction: str | dict[str, Any]) -> Observation:
        text = str(prediction)
        match = _STATUS_LINE.search(text)  # skip a preamble or a ```http fence before the status line
        try:
            if match is None:
                raise ValueError("no HTTP status line")
            message = text[match.start() :]
            if "```" in message:
                message = message.split("```", 1)[0]
            structured = parse_response(message)
        except ValueError as exc:
            reason = f"simroute: the world model's answer is not an HTTP response ({exc}): {text[:200]!r}"
            return observation_of(error_structured(502, reason), Provenance.SIM)
        return observation_of(structured, Provenance.SIM)


def _is_http(structured: Mapping[str, Any] | None) -> bool:
    return bool(structured) and "status" in structured  # type: ignore[operator]


def select_http_demonstrations(rows: Sequence[Mapping[str, Any]], call: Call, k: int) -> list[Example]:
    """Recorded real exchanges of the same host and method, best last: the same URL,
    then the same path, then any other path."""
    if k <= 0:
        return []
    url, path = call.arguments.get("url"), call.arguments.get("path")
    scored = []
    for row in rows:
        structured = (row.get("observation") or {}).get("structured")
        arguments = row.get("arguments") or {}
        if not _is_http(structured):
            continue
        score = 3 if arguments.get("url") == url else 2 if arguments.get("path") == path else 1
        past = Call(row.get("channel", "http"), row.get("server", call.server), row.get("tool", call.tool), arguments, row.get("session", ""))
        scored.append((score, -len(scored), past, structured))  # rows come newest first: newer wins a tie
    scored.sort(key=lambda item: (item[0], item[1]))
    return [(past, structured) for _, _, past, structured in scored[-k:]]
