"""The kind of ids a collection hands out, learnt from the ids it showed, and the id
a simulated create gets: the next integer after the largest seen (as the API's
counter would give), a UUID where the ids were UUIDs, else a token in the ids' own
format (their prefix, length and alphabet: `cus_` + 14 letters and digits). Made
from a digest of what the caller passes, never from a clock or a random source, so
the same session makes the same ids."""

from __future__ import annotations

import hashlib
import re
import string
import uuid
from dataclasses import dataclass
from typing import Any

INT, DIGITS, UUID, TOKEN, MIXED = "int", "digits", "uuid", "token", "mixed"
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TOKEN = re.compile(r"(.*?[_-])?([A-Za-z0-9]{6,})")
_HEX = frozenset(string.digits + "abcdef")
_ALPHABETS = {
    "hex": string.digits + "abcdef",
    "alnum": string.ascii_letters + string.digits,
    "lower": string.ascii_lowercase + string.digits,
}


@dataclass(slots=True)
class IdFormat:
    kind: str | None = None  # None: no id seen yet
    largest: int = 0  # INT and DIGITS: the largest id seen
    prefix: str = ""  # TOKEN: what every id starts with
    length: int = 0  # TOKEN: the characters after the prefix
    alphabet: str = "alnum"  # TOKEN: hex, lower or alnum
    upper: bool = False  # UUID: written in capitals

    def learn(self, value: Any) -> None:
        """Takes in one id the API showed (an int, or a string)."""
        kind = _kind_of(value)
        if self.kind is None:
            self.kind = kind
            if kind == TOKEN:
                match = _TOKEN.fullmatch(str(value))
                assert match is not None
                self.prefix, rest = match.group(1) or "", match.group(2)
                self.length, self.alphabet = len(rest), _alphabet_of(rest)
            self.upper = kind == UUID and str(value) != str(value).lower()
        elif kind != self.kind or (kind == TOKEN and not str(value).startswith(self.prefix)):
            self.kind = MIXED  # no one format to follow: the state makes no id
        if kind in (INT, DIGITS):
            self.largest = max(self.largest, int(value))

    def next(self, seed: str) -> int | str | None:
        """The id of a new resource (None: the ids' format is not known)."""
        if self.kind in (INT, DIGITS):
            self.largest += 1
            return self.largest if self.kind == INT else str(self.largest)
        digest = hashlib.sha256(seed.encode()).digest()
        if self.kind == UUID:
            made = str(uuid.UUID(bytes=digest[:16], version=4))
            return made.upper() if self.upper else made
        if self.kind == TOKEN:
            letters = _ALPHABETS[self.alphabet]
            stream = (digest * (self.length // len(digest) + 1))[: self.length]
            return self.prefix + "".join(letters[byte % len(letters)] for byte in stream)
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "largest": self.largest,
            "prefix": self.prefix,
            "length": self.length,
            "alphabet": self.alphabet,
            "upper": self.upper,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IdFormat:
        return cls(
            data.get("kind"),
            int(data.get("largest", 0)),
            str(data.get("prefix", "")),
            int(data.get("length", 0)),
            str(data.get("alphabet", "alnum")),
            bool(data.get("upper")),
        )


def looks_like_id(segment: str) -> bool:
    """Whether a path segment reads as an id (a number, a UUID, a token with digits), not a name."""
    kind = _kind_of(segment)
    return kind in (DIGITS, UUID) or (kind == TOKEN and any(c.isdigit() for c in segment))


def _kind_of(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return INT
    text = str(value)
    if text.isdigit() and not text.startswith("0"):
        return DIGITS
    if _UUID.fullmatch(text):
        return UUID
    return TOKEN if _TOKEN.fullmatch(text) else MIXED


def _alphabet_of(text: str) -> str:
    if set(text) <= _HEX:
        return "hex"
    return "lower" if text == text.lower() else "alnum"
