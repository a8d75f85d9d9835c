"""Backslash escapes as bash's echo -e, printf's format and printf %b undo them."""

from __future__ import annotations

_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
}
_OCTAL = "01234567"
_HEX = "0123456789abcdefABCDEF"


def backslash_escapes(text: str, *, echo: bool) -> tuple[str, bool]:
    """`text` with its escapes undone, and whether `\\c` stopped the output there.
    `echo`: echo -e and %b (octal as \\0nnn); else printf's format (octal as \\nnn,
    and \\" and \\' stand for the quote)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        letter = text[i + 1]
        i += 2
        if letter in _SIMPLE:
            out.append(_SIMPLE[letter])
        elif letter == "c" and echo:
            return "".join(out), True
        elif letter in "\"'" and not echo:
            out.append(letter)
        elif letter in _OCTAL and (letter == "0" or not echo):
            start = i if echo else i - 1  # echo's \0 is a prefix; printf's first digit counts
            digits = _take(text, start, _OCTAL, 3)
            out.append(chr(int(digits or "0", 8) & 0xFF))
            i = start + len(digits)
        elif letter in "xuU":
            digits = _take(text, i, _HEX, {"x": 2, "u": 4, "U": 8}[letter])
            if digits:
                out.append(chr(int(digits, 16)))
                i += len(digits)
            else:
                out.append("\\" + letter)
        else:
            out.append("\\" + letter)
    return "".join(out), False


def _take(text: str, start: int, allowed: str, most: int) -> str:
    end = start
    while end < len(text) and end - start < most and text[end] in allowed:
        end += 1
    return text[start:end]
