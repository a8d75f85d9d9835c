"""A consistent renaming of values between a recorded session and this one.

Two sessions that made the same calls on different things (repository /tmp/a in
the recording, /tmp/b now) differ in their arguments by a renaming: every value
the recording used stands for one value of this session, and no two recorded
values stand for the same one. `Renaming.pair` takes the arguments of two aligned
calls and extends the renaming, or says they cannot be renamed into each other
(then the sessions do not align).

Paths rename by their differing head: /tmp/a/src/x.py ↦ /tmp/b/src/x.py renames
the prefix /tmp/a ↦ /tmp/b, so a later /tmp/a/docs is expected as /tmp/b/docs and
an answer's /tmp/a/README is written /tmp/b/README. Values rename only into
values of their kind (an absolute path into an absolute path, a hash into a hash,
a number into a number): `HEAD` never stands for a commit hash.

`Renaming.apply` writes this session's values into a recorded answer: each
renamed value where it stands whole (not inside a longer word or file name), the
longest first, in one pass (a value written in is never renamed again). Values
too short to be told from ordinary words are used to align but never written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from calls import Observation

# Values shorter than this align calls but are not written into answers ("a", "v1").
MIN_WRITTEN = 3
# Keys of MCP content blocks whose values are not text to rename (base64 data, media types).
_NOT_TEXT = frozenset({"type", "data", "mimeType", "annotations"})

_HASH = re.compile(r"[0-9a-f]{7,64}|[0-9A-F]{7,64}")
_UUID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S*")


def kind_of(value: str) -> str:
    """The kind a value renames within."""
    if _UUID.fullmatch(value):
        return "uuid"
    if _NUMBER.fullmatch(value):
        return "number"
    if _HASH.fullmatch(value) and any(c.isdigit() for c in value):
        return "hash"
    if _URL.fullmatch(value):
        return "url"
    if value.startswith(("/", "~/")):
        return "absolute path"
    return "text"


def _differing_heads(recorded: str, current: str) -> tuple[str, str] | None:
    """Two paths' heads after their common trailing components are taken off
    (/tmp/a/src/x.py, /tmp/b/src/x.py -> /tmp/a, /tmp/b); None when they are not
    both paths or differ only in their tail (then no prefix is renamed)."""
    if "/" not in recorded or "/" not in current:
        return None
    left, right = recorded.rstrip("/").split("/"), current.rstrip("/").split("/")
    while len(left) > 1 and len(right) > 1 and left[-1] == right[-1]:
        left.pop()
        right.pop()
    head, image = "/".join(left), "/".join(right)
    if head == image or not head.strip("/") or not image.strip("/"):
        return None
    return head, image


@dataclass(slots=True)
class Renaming:
    """recorded value -> this session's value, one-to-one; and path prefixes alike."""

    values: dict[str, str] = field(default_factory=dict)
    prefixes: dict[str, str] = field(default_factory=dict)
    _values_back: dict[str, str] = field(default_factory=dict)
    _prefixes_back: dict[str, str] = field(default_factory=dict)

    def copy(self) -> Renaming:
        return Renaming(dict(self.values), dict(self.prefixes), dict(self._values_back), dict(self._prefixes_back))

    @property
    def changed(self) -> dict[str, str]:
        """The pairs that rename (path prefixes, and whole values no prefix renames so):
        what an answer gets written with."""
        out = {recorded: current for recorded, current in self.prefixes.items() if recorded != current}
        out.update(
            {
                recorded: current
                for recorded, current in self.values.items()
                if recorded != current and not self._follows(recorded, current)
            }
        )
        return out

    def _follows(self, recorded: str, current: str) -> bool:
        """Whether a renamed prefix already turns `recorded` into `current`."""
        return any(
            _under(recorded, head) and current == image + recorded[len(head) :] for head, image in self.prefixes.items()
        )

    def pair(self, recorded: Any, current: Any) -> bool:
        """Extend the renaming so that `recorded` (arguments of a recorded call) stands
        for `current` (this session's): same structure, equal non-string values, strings
        renamed consistently. False (the renaming unchanged or partly extended: use a
        copy) when they cannot be."""
        if isinstance(recorded, str) and isinstance(current, str):
            return self._pair_strings(recorded, current)
        if isinstance(recorded, Mapping) and isinstance(current, Mapping):
            if recorded.keys() != current.keys():
                return False
            return all(self.pair(recorded[name], current[name]) for name in recorded)
        if isinstance(recorded, list) and isinstance(current, list):
            return len(recorded) == len(current) and all(
                self.pair(r, c) for r, c in zip(recorded, current, strict=True)
            )
        # Numbers, booleans, null: equal, of the same type (1 is not True).
        return type(recorded) is type(current) and recorded == current

    def _pair_strings(self, recorded: str, current: str) -> bool:
        known = self.values.get(recorded)
        if known is not None:
            return known == current
        if self._values_back.get(current, recorded) != recorded:
            return False  # another recorded value already stands for it
        if recorded != current and kind_of(recorded) != kind_of(current):
            return False
        heads = _differing_heads(recorded, current)
        if heads is not None and not self._pair_prefix(*heads):
            return False
        if heads is None and recorded == current == recorded.rstrip("/") and "/" in recorded:
            # The same path on both sides: a renamed prefix above it contradicts that.
            if any(_under(recorded, head) and head != image for head, image in self.prefixes.items()):
                return False
        self.values[recorded] = current
        self._values_back[current] = recorded
        return True

    def _pair_prefix(self, head: str, image: str) -> bool:
        if self.prefixes.get(head, image) != image or self._prefixes_back.get(image, head) != head:
            return False
        self.prefixes[head] = image
        self._prefixes_back[image] = head
        return True

    def apply(self, observation: Observation) -> Observation:
        """`observation` with this session's values written in for the recorded ones."""
        writer = _Writer(self.changed)
        if writer.pattern is None:
            return observation
        content = [writer.block(block) for block in observation.content]
        structured = writer.value(observation.structured) if observation.structured is not None else None
        return Observation(content, observation.provenance, observation.is_error, structured, observation.latency_s)


def _under(path: str, head: str) -> bool:
    return path.startswith(head.rstrip("/") + "/")


class _Writer:
    """One regular expression of every renamed value, longest first, standing whole:
    not inside a word, a longer name (`a.txt` in `a.txt.bak`) or a hyphenated name."""

    def __init__(self, changed: Mapping[str, str]) -> None:
        self.changed = {recorded: current for recorded, current in changed.items() if len(recorded) >= MIN_WRITTEN}
        names = sorted(self.changed, key=len, reverse=True)
        alternatives = "|".join(re.escape(name) for name in names)
        self.pattern = re.compile(rf"(?<![\w.-])(?:{alternatives})(?![\w-]|\.\w)") if names else None

    def text(self, text: str) -> str:
        assert self.pattern is not None
        return self.pattern.sub(lambda match: self.changed[match.group(0)], text)

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {self.text(key): self.value(item) for key, item in value.items()}
        return value

    def block(self, block: dict[str, Any]) -> dict[str, Any]:
        return {key: item if key in _NOT_TEXT else self.value(item) for key, item in block.items()}
