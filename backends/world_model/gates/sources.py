"""What the gates read: an answer's own text and JSON value whatever the channel,
the tool's real recorded answers of the same shape, and the text an answer may
repeat without being degenerate."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from backends.world_model.grounding import Row, session_rows
from calls import Call, Observation, Provenance, Session

# Only answers that came from the real side (or replays of them) say how a tool answers.
SOURCES = {str(Provenance.REAL), str(Provenance.REPLAY)}
CONTEXT_CHARS = 200_000  # the session text an answer may repeat is read up to this much


def answer_text(channel: str, observation: Observation) -> str:
    """The part of an answer the tool wrote: a screen's output, an HTTP body, else the text."""
    structured = observation.structured if isinstance(observation.structured, Mapping) else {}
    if channel == "shell" and "output" in structured:
        return str(structured.get("output") or "")
    if channel == "http" and "status" in structured:
        return str(structured.get("body") or "") if structured.get("body_encoding", "text") == "text" else ""
    return observation.text


def answer_json(channel: str, observation: Observation) -> Any:
    """The answer as a JSON value (an MCP result's structured content or JSON text, an
    HTTP body), else None: a screen or a page is not judged by field."""
    if channel not in ("mcp", "http"):
        return None
    if channel == "mcp" and observation.structured is not None:
        return observation.structured
    text = answer_text(channel, observation).strip()
    if not text.startswith(("{", "[")):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def row_observation(row: Row) -> Observation:
    return Observation.from_json(dict(row.get("observation") or {}))


def real_examples(call: Call, session: Session, answers: Sequence[Row]) -> list[Row]:
    """The tool's real answers (`answers`: the grounding's, from other sessions) and
    this session's own real ones, of the call's shape: for HTTP, the same route or a
    sibling (`/weather/tokyo` for `/weather/lima`)."""
    own = [row for row in session_rows(call, session) if row.get("tool") == call.tool]
    rows = [row for row in [*answers, *own] if str((row.get("observation") or {}).get("provenance", "real")) in SOURCES]
    if call.channel == "http":
        rows = [row for row in rows if _same_shape_path(call, row)]
    return rows


def _same_shape_path(call: Call, row: Row) -> bool:
    def segments(arguments: Mapping[str, Any]) -> list[str]:
        return str(arguments.get("path") or "").split("?", 1)[0].strip("/").split("/")

    mine, theirs = segments(call.arguments), segments(row.get("arguments") or {})
    return len(mine) == len(theirs) and sum(a != b for a, b in zip(mine, theirs, strict=True)) <= 1


def repeatable(call: Call, session: Session) -> str:
    """Text an answer may repeat: the call's arguments and this environment's earlier
    turns (the agent's own arguments, the real answers it was shown)."""
    parts = [_flat(call.arguments)]
    for turn in reversed(session.history):
        if not turn.of_environment(call.channel, call.server):
            continue
        parts.append(_flat(turn.call.arguments))
        if turn.observation.provenance in (Provenance.REAL, Provenance.REPLAY):
            parts.append(answer_text(call.channel, turn.observation))
        if sum(len(part) for part in parts) > CONTEXT_CHARS:
            break
    return "\n".join(parts)


def _flat(arguments: Mapping[str, Any]) -> str:
    """Argument values as written (strings unescaped), for substring tests."""
    values: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif value is not None:
            values.append(str(value))

    walk(arguments)
    return "\n".join(values)
