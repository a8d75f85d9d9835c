"""Entities the call named, where the tool's answers name them. A weather tool's
answers for Paris and Tokyo each name their city; a simulated answer for Lima that
does not name Lima (it names Paris, copied from an example) answers another call.

Learnt from the tool's real answers: an input (a string argument, or an HTTP path
segment, as `echoed_inputs.inputs_of` reads them) is echoed when every recorded
answer to a call with it names its value, over at least two different values.
Where `echoed_inputs.wrong_entity` holds a JSON field to its input, this holds the
answer's whole text (prose answers too) to name it. Names are compared case-blind,
with `-`, `_`, `+` and URL escapes read as spaces, as whole words."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote

from backends.world_model.echoed_inputs import MIN_EXAMPLES, inputs_of
from backends.world_model.gates.sources import answer_json, answer_text, row_observation
from backends.world_model.grounding import Row
from calls import Call, Observation

MAX_VALUE_CHARS = 200  # longer values (a file's contents) are not held to appear verbatim
_SEPARATORS = re.compile(r"[-_+\s]+")


def missing_entities(call: Call, observation: Observation, examples: Sequence[Row]) -> str | None:
    """Why `observation` does not name an entity `call` named that the tool's recorded
    answers (`examples`) always name, or None. Error answers are not judged."""
    if observation.is_error:
        return None
    echoed = echoed_inputs(call.channel, examples)
    if not echoed:
        return None
    said = searchable(call.channel, observation)
    for name, value in inputs_of(call.arguments).items():
        if name in echoed and _judged(value) and not names(said, value):
            return f"the answer does not name {value!r} ({name}), which the tool's recorded answers always name"
    return None


def echoed_inputs(channel: str, examples: Sequence[Row]) -> set[str]:
    """The inputs every recorded success names, over at least two different values."""
    pairs = [
        (inputs_of(row.get("arguments") or {}), searchable(channel, observation))
        for row in examples
        if not (observation := row_observation(row)).is_error
    ]
    echoed = set()
    for name in {name for inputs, _ in pairs for name in inputs}:
        held = [(inputs[name], said) for inputs, said in pairs if name in inputs and _judged(inputs[name])]
        if len(held) < MIN_EXAMPLES or len({_normal(value) for value, _ in held}) < 2:
            continue
        if all(names(said, value) for value, said in held):
            echoed.add(name)
    return echoed


def searchable(channel: str, observation: Observation) -> str:
    """An answer's text, and its JSON strings unescaped (`"C:\\\\tmp"` names `C:\\tmp`)."""
    text = answer_text(channel, observation)
    value = answer_json(channel, observation)
    strings: list[str] = []
    if value is not None:
        _strings(value, strings)
    return _normal(text + "\n" + "\n".join(strings))


def names(said: str, value: str) -> bool:
    """Whether the (normalised) answer text names `value` as a whole word."""
    wanted = _normal(value)
    return bool(wanted) and re.search(r"(?<!\w)" + re.escape(wanted) + r"(?!\w)", said) is not None


def _judged(value: str) -> bool:
    return 0 < len(value.strip()) <= MAX_VALUE_CHARS


def _normal(text: str) -> str:
    return _SEPARATORS.sub(" ", unquote(text).casefold()).strip()


def _strings(value: Any, out: list[str], depth: int = 0) -> None:
    if depth > 16:
        return
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _strings(item, out, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out, depth + 1)
    elif value is not None:
        out.append(json.dumps(value))
