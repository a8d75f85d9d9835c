"""Answers that name what the call asked for. Many tools echo an input in their
answer: a weather API's `/weather/tokyo` answers `"city": "tokyo"`, a clock's
`timezone=Asia/Tokyo` answers `"timezone": "Asia/Tokyo"`. A small world model shown
the answer for Tokyo as an example copies it for Lima. The recorded answers show
which fields echo which input; a simulated answer that puts another value there
names the wrong entity, and the simulator asks once more (then answers a clear
error) instead of passing it to the agent.

Inputs are the call's top-level string arguments by name and, for HTTP, the
segments of its path as `path[i]`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from calls import Observation

# Fewer recorded answers than this prove nothing: a field can equal an input once by chance.
MIN_EXAMPLES = 2


def inputs_of(arguments: Mapping[str, Any]) -> dict[str, str]:
    """The call's inputs an answer may echo: string arguments, and each segment of
    an HTTP path (`path[0]` is the first after the leading slash)."""
    inputs = {name: value for name, value in arguments.items() if isinstance(value, str) and value.strip()}
    path = arguments.get("path")
    if isinstance(path, str):
        segments = path.split("?", 1)[0].strip("/").split("/")
        inputs.update({f"path[{i}]": segment for i, segment in enumerate(segments) if segment})
    return inputs


def json_object(text: str) -> dict[str, Any] | None:
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _same(a: str, b: str) -> bool:
    return a.strip().casefold() == b.strip().casefold()


def echoed_fields(examples: Iterable[tuple[Mapping[str, Any], Any]]) -> dict[str, str]:
    """field -> input name, for the top-level string fields that hold the same
    input's value in every recorded (arguments, answer object) pair — at least
    MIN_EXAMPLES pairs, with different values (a constant field echoes nothing)."""
    pairs = [(inputs_of(arguments), answer) for arguments, answer in examples if isinstance(answer, dict)]
    if len(pairs) < MIN_EXAMPLES:
        return {}
    echoes: dict[str, str] = {}
    first_inputs, first_answer = pairs[0]
    for field, value in first_answer.items():
        if not isinstance(value, str):
            continue
        for name, given in first_inputs.items():
            if not _same(value, given):
                continue
            held = [answer.get(field) for _, answer in pairs]
            asked = [inputs.get(name) for inputs, _ in pairs]
            if (
                all(isinstance(h, str) and isinstance(a, str) and _same(h, a) for h, a in zip(held, asked, strict=True))
                and len({str(h).casefold() for h in held}) > 1
            ):
                echoes[field] = name
                break
    return echoes


def wrong_entity(echoes: Mapping[str, str], arguments: Mapping[str, Any], answer: Any) -> str | None:
    """Why `answer` names another entity than the call asked for, or None."""
    if not echoes or not isinstance(answer, dict):
        return None
    inputs = inputs_of(arguments)
    for field, name in echoes.items():
        said, asked = answer.get(field), inputs.get(name)
        # Containment is agreement ("Lima, Peru" for "Lima"): the entity is named either way.
        if isinstance(said, str) and isinstance(asked, str) and asked.strip().casefold() not in said.casefold():
            return f"the answer's {field} is {said!r}, the call asked for {asked!r} (its recorded answers echo {name})"
    return None


def answer_object(observation: Observation) -> Any:
    """A tool result as an object: its structured content, else its text read as JSON
    (servers without an output schema often answer JSON text), else None. An error
    result names no entity of its own: None."""
    if observation.is_error:
        return None
    if observation.structured is not None:
        return observation.structured
    return json_object(observation.text)


def contradicted_argument(arguments: dict[str, Any], answer: Any) -> str | None:
    """An answer naming another entity than the call asked for: a field of the
    answer (top level, by the argument's own name) holding a different string
    than the argument. `{"timezone": "Europe/Paris"}` for `timezone=America/Lima`
    is the model copying an example, not answering the call. Containment either way
    is agreement (`Lima` and `America/Lima`); case and surrounding space are ignored."""
    if not isinstance(answer, dict):
        return None
    for name, asked in arguments.items():
        said = answer.get(name)
        if not isinstance(asked, str) or not isinstance(said, str) or not asked.strip() or not said.strip():
            continue
        a, b = asked.strip().casefold(), said.strip().casefold()
        if a not in b and b not in a:
            return f"the answer names {name} {said!r}, the call asked for {asked!r}"
    return None


def pin_echoes(
    schema: dict[str, Any] | None, echoes: Mapping[str, str], arguments: Mapping[str, Any]
) -> dict[str, Any] | None:
    """`schema` with each echoed field fixed to this call's input (`const`), so the
    grammar writes the entity the call asked for; unchanged without echoes."""
    if schema is None or not echoes or not isinstance(schema.get("properties"), dict):
        return schema
    inputs = inputs_of(arguments)
    properties = dict(schema["properties"])
    for field, name in echoes.items():
        if field in properties and name in inputs:
            properties[field] = {"const": inputs[name]}
    return {**schema, "properties": properties}
