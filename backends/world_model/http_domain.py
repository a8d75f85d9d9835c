"""The HTTP domain: raw HTTP requests as actions, raw HTTP responses as observations.

Action      = the request message: request line, headers, blank line, body
Observation = the response message: status line, headers, blank line, body
History     = this session's earlier exchanges with the same host
Examples    = recorded real exchanges with the same host and method from other
              sessions, the same path (and URL) preferred, given as the turns just
              before the current request, best last

The answer's shape is held by grammar: a status line, headers, a blank line and
a body; when the host's recorded answers for the route (method and path) are
JSON, the body is JSON of their shape. A prediction is read back into the
structured response of a real one (status, headers, body).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeIs

from backends.http.messages import observation_of, parse_response, render_request, render_response
from backends.world_model.checks import check_http
from backends.world_model.domain import Constraint, CountTokens
from backends.world_model.echoed_inputs import echoed_fields, json_object, pin_echoes, wrong_entity
from backends.world_model.grammars import http_grammar, infer_json_schema
from backends.world_model.grounding import Grounding, Row, ground, session_rows
from backends.world_model.parse import InvalidPrediction
from backends.world_model.prompt import (
    CLOSING,
    EXAMPLE_NOTE,
    RenderExample,
    omit_oldest,
    render_observation,
)
from calls import Call, Observation, Provenance, Session

TASK = (
    "You are the HTTP server {host}. An AI agent sends it HTTP requests. For each request, predict "
    "exactly the HTTP response the real server sends back: the status line, the response headers, a "
    "blank line and the body, in the server's own format (JSON APIs answer JSON). Stay consistent with "
    "everything this server answered earlier in this session: resources created, changed or deleted."
)
BODY_CHARS = 2000  # request and response bodies shown to the model are cut there
_STATUS_LINE = re.compile(r"HTTP/\d(?:\.\d)? \d{3}\b")
# The prompt's own labels: a model that writes one has moved on from its answer.
_SCAFFOLDING = re.compile(r"\n\s*(?:\*\*(?:Environment )?Observation:\*\*|\*\*Action:\*\*|### Turn \d)")

Example = tuple[Call, dict[str, Any]]  # (the request, its structured response)


class HttpDomain:
    def __init__(
        self,
        *,
        records_for: Callable[[Call], Sequence[Row]] = lambda call: (),
        call_key_of: Callable[[Call], str] | None = None,
        demonstrations: int = 2,
        initial_state: Mapping[str, str] | None = None,
        simulation_instruction: Mapping[str, str] | None = None,
        body_chars: int = BODY_CHARS,
    ) -> None:
        self.records_for = records_for
        self.call_key_of = call_key_of
        self.demonstrations = demonstrations
        self.initial_state = dict(initial_state or {})
        self.simulation_instruction = dict(simulation_instruction or {})
        self.body_chars = body_chars

    def system(self, host: str, world: str | None = None) -> str:
        """`world`: the session's world document (configured, or an episode's)."""
        parts = [TASK.format(host=host), f"## Action space\nHTTP/1.1 requests to {host}, written as raw HTTP messages."]
        state = [text.strip() for text in (self.initial_state.get(host), world) if text and text.strip()]
        if state:
            parts.append("## Initial state\n" + "\n\n".join(state))
        if instruction := self.simulation_instruction.get(host):
            parts.append("## Simulation instruction\n" + instruction.strip())
        return "\n\n".join(parts)

    def render_action(self, call: Call, number: int) -> str:
        return f"### Turn {number}\n**Action:**\n```http\n{render_request(call, body_chars=self.body_chars)}\n```"

    def render_response(self, structured: Mapping[str, Any]) -> str:
        body = structured.get("body")
        if isinstance(body, str) and len(body) > self.body_chars:
            structured = {
                **structured,
                "body": body[: self.body_chars] + f"\n[{len(body) - self.body_chars} characters cut]",
            }
        return render_response(structured)

    def ground(
        self, call: Call, session: Session, *, count_tokens: CountTokens, budget_tokens: int = 1200
    ) -> Grounding:
        return ground(
            self.records_for(call),
            call,
            call_key=self.call_key_of(call) if self.call_key_of else None,
            own=session_rows(call, session),
            k=self.demonstrations,
            budget_tokens=budget_tokens,
            count_tokens=count_tokens,
            size_of=lambda row: self.render_response(row["observation"]["structured"]),
            usable=lambda row: _is_http((row.get("observation") or {}).get("structured")),
        )

    def messages(
        self,
        call: Call,
        session: Session,
        *,
        budget_tokens: int,
        count_tokens: CountTokens,
        grounding: Grounding | None = None,
    ) -> list[dict[str, str]]:
        # The session's exchanges with this host, then the recorded examples as marked
        # turns right before the current request (see prompt.py for why).
        turns: list[tuple[Call, str]] = [
            (turn.call, self._shown(turn.observation))
            for turn in session.history
            if turn.of_environment(call.channel, call.server)
        ]

        def render_turn(index: int, number: int) -> tuple[str, str]:
            past, shown = turns[index]
            return self.render_action(past, number), render_observation(shown)

        def render_example(past: Call, structured: Mapping[str, Any]) -> RenderExample:
            note = EXAMPLE_NOTE.format(what="exchange of this server")
            return lambda number: (
                note + self.render_action(past, number),
                render_observation(self.render_response(structured)),
            )

        def render_final(number: int) -> str:
            return self.render_action(call, number) + "\n\n" + CLOSING.format(what="HTTP server")

        system = self.system(call.server, session.world_document_for(call.channel))
        if grounding is None:
            grounding = self.ground(call, session, count_tokens=count_tokens, budget_tokens=budget_tokens // 3)
        examples = [render_example(past, structured) for past, structured in map(_example_of, grounding.rows)]
        messages, _ = omit_oldest(  # the whole history when it fits
            system,
            len(turns),
            render_turn,
            render_final,
            budget_tokens=budget_tokens,
            count_tokens=count_tokens,
            examples=examples,
        )
        return messages

    def _shown(self, observation: Observation) -> str:
        return self.render_response(observation.structured) if _is_http(observation.structured) else observation.text

    def refusal(self, call: Call, session: Session) -> str | None:
        return None

    def constraint(self, call: Call, session: Session, grounding: Grounding, *, max_tokens: int) -> Constraint:
        bodies = route_json_bodies(grounding.answers, call)
        # Recorded answers from other sessions and this session's own earlier exchanges:
        # an agent that asked for Paris and Tokyo a moment ago taught the shape too.
        siblings = sibling_bodies([*grounding.answers, *grounding.rows, *session_rows(call, session)], call)
        echoes = echoed_fields(siblings)
        if bodies is None and echoes and all(body is not None for _, body in siblings):
            bodies = [body for _, body in siblings]  # no answer on this path: its siblings' shape, this call's entity
        json_body = bodies is not None
        body_schema = pin_echoes(infer_json_schema(bodies), echoes, call.arguments) if bodies else None

        def check(observation: Observation) -> str | None:
            body = json_object(str((observation.structured or {}).get("body") or ""))
            return check_http(observation, json_body=json_body) or wrong_entity(echoes, call.arguments, body)

        return Constraint(
            max_tokens=max_tokens,
            grammar=http_grammar(max_tokens=max_tokens, body_schema=body_schema, json_body=json_body),
            temperature=0.0 if grounding.unanimous else None,
            check=check,
        )

    def observation(self, call: Call, prediction: str) -> Observation:
        text = str(prediction)
        try:
            structured = parse_response(read_message(text))
        except ValueError as exc:
            raise InvalidPrediction(
                f"the world model's answer is not an HTTP response ({exc}): {text[:200]!r}"
            ) from exc
        return observation_of(structured, Provenance.SIM)


def route_json_bodies(rows: Sequence[Row], call: Call) -> list[Any] | None:
    """The decoded bodies of the route's recorded answers (same method and path)
    when every one of them is JSON; None when some are not or there are none."""
    path = call.arguments.get("path")
    bodies = []
    for row in rows:
        if (row.get("arguments") or {}).get("path") != path:
            continue
        structured = (row.get("observation") or {}).get("structured") or {}
        if structured.get("body_encoding", "text") != "text":
            return None
        try:
            bodies.append(json.loads(str(structured.get("body") or "")))
        except ValueError:
            return None
    return bodies or None


def sibling_bodies(rows: Sequence[Row], call: Call) -> list[tuple[dict[str, Any], Any]]:
    """(arguments, JSON body) of the recorded answers to sibling routes: the same
    method on a path that differs from the call's in one segment (`/weather/tokyo`
    for `/weather/lima`), each exchange once."""
    path = str(call.arguments.get("path") or "").split("?", 1)[0].strip("/").split("/")
    seen: set[str] = set()
    out = []
    for row in rows:
        arguments = row.get("arguments") or {}
        other = str(arguments.get("path") or "").split("?", 1)[0].strip("/").split("/")
        if arguments.get("method", call.arguments.get("method")) != call.arguments.get("method") or len(other) != len(
            path
        ):
            continue
        if sum(a != b for a, b in zip(path, other, strict=True)) != 1 or row.get("id", id(row)) in seen:
            continue
        seen.add(row.get("id", id(row)))
        structured = (row.get("observation") or {}).get("structured") or {}
        out.append((arguments, json_object(str(structured.get("body") or ""))))
    return out


def _example_of(row: Row) -> Example:
    arguments = row.get("arguments") or {}
    past = Call(
        row.get("channel", "http"), row.get("server", ""), row.get("tool", ""), arguments, row.get("session", "")
    )
    return past, row["observation"]["structured"]


def read_message(text: str) -> str:
    """The HTTP response in a model's answer, leniently: from the first status line
    (past any preamble or markup), the head up to a second status line or a closing
    fence, and a body that may sit in its own ``` fence. Raises ValueError."""
    text = text.replace("\r\n", "\n")
    match = _STATUS_LINE.search(text)
    if match is None:
        raise ValueError("no HTTP status line")
    head, _, rest = text[match.start() :].partition("\n\n")
    if again := _STATUS_LINE.search(head, 1):  # a second status line: the model began another answer
        head, rest = head[: again.start()], ""
    if "```" in head:  # the fence closed inside the head: there is no body
        head, rest = head.split("```", 1)[0], ""
    body = rest.lstrip("\n")
    if body.startswith("```"):  # the body in a fence of its own (```json …```)
        body = body.split("\n", 1)[1] if "\n" in body else ""
    body = _SCAFFOLDING.split(body.split("```", 1)[0], 1)[0]  # the model went on with the next turn
    return f"{head.rstrip()}\n\n{body}"


def _is_http(structured: Mapping[str, Any] | None) -> TypeIs[Mapping[str, Any]]:
    return structured is not None and "status" in structured
