"""`mislead` by default: a seeded, type-preserving mutation of the truth.

The route's answer keeps its shape, its fields and their types; its facts move:

- datetimes (ISO 8601, whole values or inside text) move 1–48 h earlier or later, in
  the same format (a date alone moves whole days, a `Z` stays a `Z`);
- numbers move 5–50 % up or down, an int staying an int and a float keeping its
  decimals (a number written in a string too);
- ids (UUIDs; single tokens of letters and digits, or values of an `id` key) are
  redrawn in the same format: each character by its class, a letters-only prefix
  before `_`/`-` kept (`ord_8f3k2` → `ord_3k9q7`);
- names (values of keys such as `name`, `city`, `timezone`) are swapped for others
  seen in the session's recorded answers or elsewhere in this one; with none seen,
  the name stays.

Each change is a pure function of the perturbation's seed, rule and call number and of
the value itself: the same value moves the same way wherever it appears in the answer
(its structured content and its text agree), and two seeds give two different wrong
answers. The world model rewrites the answer instead only when the rule asks
(`mislead_with: world_model`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import date, datetime, timedelta
from typing import Any

from backends.http.messages import render_response
from calls import Observation, Perturbation, Provenance, Turn
from policies.perturbation.draws import draw

_DATETIME = r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
_NUMBER = r"(?<![\w.\-])-?\d+(?:\.\d+)?(?![\w.])"
_IN_TEXT = re.compile(f"(?P<datetime>(?<!\\d){_DATETIME}(?!\\d))|(?P<number>{_NUMBER})")
_WHOLE_DATETIME = re.compile(f"^{_DATETIME}$")
_DATETIME_PARTS = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:([T ])(\d{2}:\d{2})(:\d{2})?(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?$")
_HEX_CHARS = frozenset("0123456789abcdefABCDEF")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_TOKEN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]*$")
_PREFIX = re.compile(r"^([A-Za-z]+[_\-])(.+)$")
_NAME_KEYS = frozenset(
    {
        "author",
        "owner",
        "user",
        "username",
        "city",
        "country",
        "location",
        "timezone",
        "company",
        "assignee",
        "customer",
    }
)
_ALPHABETS = ("0123456789", "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def is_name_key(key: str) -> bool:
    lowered = key.lower()
    return lowered in _NAME_KEYS or lowered.endswith("name")


def is_id_key(key: str) -> bool:
    return key.lower() in ("id", "uuid", "sha", "hash") or key.endswith(("_id", "-id", "Id", "ID"))


class Mutator:
    """One answer's mutation: draws from (seed, rule, n), names from `names`."""

    def __init__(self, perturbation: Perturbation, names: dict[str, list[str]]) -> None:
        self.perturbation = perturbation
        self.names = names  # name key (lowered) -> names seen, in a stable order

    def uniform(self, salt: str) -> float:
        p = self.perturbation
        return draw(p.seed, "", p.rule, "mislead", p.n, salt)

    # --- values ------------------------------------------------------------------------

    def value(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: self.value(v, str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(item, key) for item in value]
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int | float):
            return self.number(value)
        if isinstance(value, str):
            return self.string(value, key)
        return value

    def string(self, text: str, key: str = "") -> str:
        if key and is_name_key(key):
            return self.name(text, key)
        if _WHOLE_DATETIME.match(text):
            return self.datetime(text)
        if _UUID.match(text) or (_TOKEN.match(text) and (key and is_id_key(key) or _mixes_letters_and_digits(text))):
            return self.identifier(text)
        return self.text(text)

    def text(self, text: str) -> str:
        """Datetimes and numbers inside free text moved; a JSON text mutated as values."""
        stripped = text.strip()
        if stripped[:1] in ("{", "["):
            try:
                parsed = json.loads(stripped)
            except ValueError:
                pass
            else:
                # Written back as it was written: indented, spaced, or compact (as servers send it).
                if "\n" in stripped:
                    return json.dumps(self.value(parsed), ensure_ascii=False, indent=2)
                compact = ", " not in stripped and ": " not in stripped
                return json.dumps(self.value(parsed), ensure_ascii=False, separators=(",", ":") if compact else None)

        def moved(match: re.Match[str]) -> str:
            found = match.group(0)
            if match.group("datetime"):
                return self.datetime(found)
            number = float(found) if "." in found else int(found)
            new = self.number(number)
            return _decimals(new, found) if isinstance(new, float) else str(new)

        return _IN_TEXT.sub(moved, text)

    def number(self, number: int | float) -> int | float:
        u = self.uniform(f"number\x1f{number!r}")
        share = 0.05 + 0.45 * (u * 2 % 1.0)  # 5–50 %, its direction from the draw's first half
        factor = 1 + share if u < 0.5 else 1 - share
        if isinstance(number, int):
            if number == 0:
                return 1 + int(u * 9)
            moved = round(number * factor)
            return moved if moved != number else number + (1 if u < 0.5 else -1)
        if number == 0.0:
            return round(0.5 + u * 9, 2)
        places = len(repr(number).split(".")[1]) if "." in repr(number) and "e" not in repr(number) else 2
        moved_float = round(number * factor, max(places, 1))
        return moved_float if moved_float != number else number * factor

    def datetime(self, text: str) -> str:
        parts = _DATETIME_PARTS.match(text)
        if parts is None:
            return text
        day, separator, clock, seconds, fraction, zone = parts.groups()
        u = self.uniform(f"datetime\x1f{text}")
        sign = 1 if u < 0.5 else -1
        hours = 1 + (u * 2 % 1.0) * 47  # 1–48 h
        if clock is None:  # a date alone: whole days
            return (date.fromisoformat(day) + timedelta(days=sign * max(1, round(hours / 24)))).isoformat()
        # The wall clock moves; the offset as written stays (the same zone, another time).
        when = datetime.fromisoformat(f"{day}T{clock}{seconds or ''}")
        step = 1 if seconds else 60  # whole units of the format's precision
        moved = when + timedelta(seconds=sign * max(step, round(hours * 3600 / step) * step))
        out = (
            moved.strftime("%Y-%m-%d")
            + separator
            + moved.strftime("%H:%M")
            + (moved.strftime(":%S") if seconds else "")
        )
        if fraction:
            out += fraction  # the sub-second part as written: the move is whole seconds
        return out + (zone or "")

    def identifier(self, text: str) -> str:
        prefix, rest = "", text
        if not _UUID.match(text) and (match := _PREFIX.match(text)) is not None:
            prefix, rest = match.group(1), match.group(2)
        hexadecimal = _UUID.match(text) is not None or _is_hex(rest)
        out = []
        for index, char in enumerate(rest):
            if hexadecimal and char in _HEX_CHARS:
                alphabet = "0123456789ABCDEF" if char.isupper() else "0123456789abcdef"
            else:
                alphabet = next((a for a in _ALPHABETS if char in a), "")
            if not alphabet:
                out.append(char)  # separators keep their places
                continue
            out.append(alphabet[int(self.uniform(f"id\x1f{text}\x1f{index}") * len(alphabet))])
        redrawn = prefix + "".join(out)
        return redrawn if redrawn != text else prefix + rest[::-1]

    def name(self, text: str, key: str) -> str:
        pool = [n for n in self.names.get(key.lower(), []) if n != text] or [
            n for k, names in sorted(self.names.items()) for n in names if n != text and k != key.lower()
        ]
        if not pool:
            return text
        return pool[int(self.uniform(f"name\x1f{text}") * len(pool))]


def mutated(observation: Observation, perturbation: Perturbation, history: Iterable[Turn]) -> Observation | None:
    """The answer with its facts moved (provenance `none`: simroute made it), or None
    when nothing in it is a fact this mutation moves."""
    names = names_seen([observation, *(turn.observation for turn in history if not turn.perturbed)])
    mutator = Mutator(perturbation, names)
    structured = observation.structured
    if isinstance(structured, dict) and "status" in structured and "body" in structured:  # an HTTP answer: its body
        if structured.get("body_encoding") != "text":
            return None
        body = mutator.text(str(structured.get("body") or ""))
        if body == structured.get("body"):
            return None
        data = body.encode()
        changed = {**structured, "body": body, "body_size": len(data), "truncated": False}
        changed.pop("body_sha256", None)
        return replace(
            observation,
            content=[{"type": "text", "text": render_response(changed)}],
            structured=changed,
            provenance=Provenance.NONE,
        )
    for field in ("output", "snapshot"):  # a shell command's output, a browser page's snapshot
        if isinstance(structured, dict) and isinstance(structured.get(field), str):
            return _with_text_field(observation, mutator, field)
    new_structured = mutator.value(structured) if isinstance(structured, dict) else structured
    content = [
        {**block, "text": mutator.text(block["text"])} if block.get("type") == "text" else block
        for block in observation.content
    ]
    if new_structured == structured and content == observation.content:
        return None
    return replace(observation, content=content, structured=new_structured, provenance=Provenance.NONE)


def _with_text_field(observation: Observation, mutator: Mutator, field: str) -> Observation | None:
    structured = dict(observation.structured or {})
    before = structured[field]
    structured[field] = mutator.text(before)
    if structured[field] == before:
        return None
    content = [
        {**block, "text": block["text"].replace(before, structured[field])} if block.get("type") == "text" else block
        for block in observation.content
    ]
    return replace(observation, content=content, structured=structured, provenance=Provenance.NONE)


def names_seen(observations: Iterable[Observation]) -> dict[str, list[str]]:
    """Name key (lowered) -> the distinct names its values took, sorted (a stable pool)."""
    found: dict[str, set[str]] = {}

    def walk(value: Any, key: str = "") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, str(k))
        elif isinstance(value, list):
            for item in value:
                walk(item, key)
        elif isinstance(value, str) and key and is_name_key(key) and 0 < len(value) <= 200:
            found.setdefault(key.lower(), set()).add(value)

    for observation in observations:
        if observation.is_error:
            continue
        walk(observation.structured)
        for block in observation.content:
            text = block.get("text", "") if block.get("type") == "text" else ""
            if text.strip()[:1] in ("{", "["):
                try:
                    walk(json.loads(text))
                except ValueError:
                    pass
    return {key: sorted(names) for key, names in found.items()}


def _mixes_letters_and_digits(text: str) -> bool:
    return any(c.isdigit() for c in text) and any(c.isalpha() for c in text) and len(text) >= 4


def _is_hex(text: str) -> bool:
    return len(text) >= 6 and all(c in _HEX_CHARS for c in text)


def _decimals(number: float, written: str) -> str:
    places = len(written.split(".")[1]) if "." in written else 0
    return f"{number:.{places}f}"
