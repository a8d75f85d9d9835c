"""Field values that fit their field. A weather answer's `sky` holds words in every
recorded answer ("sunny", "snowing"); a simulated `"sky": "2026-11-28T01:22:50"` is
a value of another kind, however well it matches a schema that allows any string.

Per field path of the tool's recorded JSON answers (`sky`, `current.temp_c`,
`products[].name`), the kind of value they hold: a JSON type, and for strings a
class (a datetime, a URL, a token such as an id or version, words). A path is
judged when at least two recorded answers hold it and agree on its kind (strings:
over at least two different values, so a constant says nothing); a simulated value
of a kind that does not fit fails. Null and the empty string fit any field (missing
data), a name may be a token (`R2D2`) and a token a single word (`main`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from backends.world_model.gates.sources import answer_json, row_observation
from backends.world_model.grounding import Row
from calls import Observation

MIN_ANSWERS = 2
MAX_DEPTH = 8
MAX_VALUES = 2000  # values read per answer: bounded work on a long listing

_DATETIME = re.compile(
    r"^(?:\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?\s?(?:Z|[+-]\d{2}(?::?\d{2})?|UTC|GMT)?)?"
    r"|\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s?[AaPp]\.?[Mm]\.?)?(?:\s?(?:Z|UTC|GMT|[+-]\d{2}:?\d{2}))?"
    r"|\d{1,2}/\d{1,2}/\d{2,4}(?:,? \d{1,2}:\d{2}(?::\d{2})?(?:\s?[AaPp][Mm])?)?"
    r"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*, \d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} (?:GMT|UTC|[+-]\d{4}))$"
)
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://\S+$")
_SPACE = re.compile(r"\s")
_DIGIT = re.compile(r"\d")


def kind(value: Any) -> str | None:
    """The kind of a JSON value: `boolean`, `number`, `object`, `array`, and for a
    string `datetime`, `url`, `token` (one word with a digit), `word` (one word
    without), `prose`; None for null and the empty string (they fit any field)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    text = str(value).strip()
    if not text:
        return None
    if _DATETIME.match(text):
        return "datetime"
    if _URL.match(text):
        return "url"
    if _SPACE.search(text):
        return "prose"
    return "token" if _DIGIT.search(text) else "word"


# What a recorded kind is judged as: words and prose are one kind (`sunny`, `partly cloudy`).
_CLASS = {"word": "text", "prose": "text"}
# For each class the recordings agree on, the simulated kinds that do not fit it.
_UNFIT = {
    "datetime": {"url", "token", "word", "prose", "number", "boolean", "object", "array"},
    "url": {"datetime", "token", "word", "prose", "number", "boolean", "object", "array"},
    "token": {"datetime", "url", "prose", "number", "boolean", "object", "array"},
    "text": {"datetime", "url", "number", "boolean", "object", "array"},
    "number": {"datetime", "url", "token", "word", "prose", "boolean", "object", "array"},
    "boolean": {"datetime", "url", "token", "word", "prose", "number", "object", "array"},
    "object": {"datetime", "url", "token", "word", "prose", "number", "boolean", "array"},
    "array": {"datetime", "url", "token", "word", "prose", "number", "boolean", "object"},
}
_STRING_CLASSES = {"datetime", "url", "token", "text"}


def field_kinds(channel: str, examples: Sequence[Row]) -> dict[str, str]:
    """path -> the class every recorded success agrees on there (see the module's doc)."""
    answers: dict[str, int] = {}
    classes: dict[str, set[str]] = {}
    values: dict[str, set[str]] = {}
    for row in examples:
        observation = row_observation(row)
        value = None if observation.is_error else answer_json(channel, observation)
        if value is None:
            continue
        held = set()
        for path, item in values_of(value):
            found = kind(item)
            if found is None:
                continue
            held.add(path)
            classes.setdefault(path, set()).add(_CLASS.get(found, found))
            values.setdefault(path, set()).add(str(item)[:200])
        for path in held:
            answers[path] = answers.get(path, 0) + 1
    agreed = {}
    for path, count in answers.items():
        if count < MIN_ANSWERS or len(classes[path]) != 1:
            continue
        (cls,) = classes[path]
        if cls in _STRING_CLASSES and len(values[path]) < 2:
            continue  # a constant string says nothing of the field's kind
        agreed[path] = cls
    return agreed


def unfit_fields(observation: Observation, examples: Sequence[Row], *, channel: str = "mcp") -> str | None:
    """Why a field of `observation` holds a value of another kind than the tool's
    recorded answers (`examples`) hold there, or None. Error answers are not judged."""
    if observation.is_error:
        return None
    value = answer_json(channel, observation)
    if value is None:
        return None
    expected = field_kinds(channel, examples)
    if not expected:
        return None
    for path, item in values_of(value):
        cls, found = expected.get(path), kind(item)
        if cls is not None and found is not None and found in _UNFIT[cls]:
            shown = str(item)[:40]
            return (
                f"the answer's {path or 'value'} holds {_named(found)} ({shown!r}); the tool's recorded answers "
                f"hold {_named(cls)} there"
            )
    return None


def values_of(value: Any, path: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(path, value) for every value of a JSON document, arrays' items under `name[]`;
    at most MAX_VALUES, MAX_DEPTH deep."""
    stack = [(path, value, depth)]
    emitted = 0
    while stack and emitted < MAX_VALUES:
        where, item, level = stack.pop()
        if where:
            yield where, item
            emitted += 1
        if level >= MAX_DEPTH:
            continue
        if isinstance(item, dict):
            stack.extend(
                (f"{where}.{key}" if where else str(key), child, level + 1)
                for key, child in reversed(list(item.items()))
            )
        elif isinstance(item, list):
            stack.extend((f"{where}[]", child, level + 1) for child in reversed(item))


_NAMES = {
    "datetime": "a date or time",
    "url": "a URL",
    "token": "an id-like token",
    "word": "a word",
    "prose": "words",
    "text": "words",
    "number": "a number",
    "boolean": "a boolean",
    "object": "an object",
    "array": "a list",
}


def _named(kind_name: str) -> str:
    return _NAMES.get(kind_name, kind_name)
