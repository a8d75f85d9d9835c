"""POSIX regular expressions as GNU grep reads them (basic by default, extended with -E),
translated to Python's `re`. Selecting lines needs only whether a line matches, where
Python's first-match and POSIX's longest-match agree. Anything whose meaning differs
or is uncertain (collating elements, equivalence classes, odd intervals) raises
Unanswerable rather than guess."""

from __future__ import annotations

import re

from backends.world_state.shell.errors import Unanswerable

_CLASSES = {
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "alnum": "a-zA-Z0-9",
    "upper": "A-Z",
    "lower": "a-z",
    "space": r" \t\n\r\f\v",
    "blank": r" \t",
    "xdigit": "0-9A-Fa-f",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
}
_PASSED_ESCAPES = "wWsSbB"  # the same in GNU grep and Python


def translate(pattern: str, *, extended: bool) -> str:
    out: list[str] = []
    i = 0
    at_start = True  # where `*` is literal and `^` anchors (start, after a group or alternation)
    while i < len(pattern):
        char = pattern[i]
        starts_next = False
        if char == "\\":
            if i + 1 == len(pattern):
                raise Unanswerable("a trailing backslash in a pattern")
            letter = pattern[i + 1]
            i += 2
            if not extended and letter in "(|":
                out.append(letter)
                starts_next = True
            elif not extended and letter in "){}+?":
                out.append(letter)
            elif letter in "123456789":
                out.append("\\" + letter)
            elif letter in _PASSED_ESCAPES:
                out.append("\\" + letter)
            elif letter == "<":
                out.append(r"\b(?=\w)")
            elif letter == ">":
                out.append(r"\b(?<=\w)")
            elif letter.isalnum():
                raise Unanswerable(f"the escape \\{letter} in a pattern")
            else:
                out.append(re.escape(letter))
            at_start = starts_next
            continue
        if char == "[":
            end, text = _bracket(pattern, i)
            out.append(text)
            i = end
            at_start = False
            continue
        i += 1
        if char == "*" and at_start:
            out.append(r"\*")
        elif char == "^":
            if at_start or extended:
                out.append("^")
                starts_next = True
            else:
                out.append(r"\^")
        elif char == "$":
            rest = pattern[i:]
            anchors = extended or rest == "" or rest.startswith("\\)") or rest.startswith("\\|")
            out.append("$" if anchors else r"\$")
        elif char in "+?(){}|":
            if not extended:
                out.append("\\" + char)
            elif char == "{" and not re.match(r"\d*(,\d*)?\}", pattern[i:]):
                raise Unanswerable("an interval GNU grep reads its own way")
            elif char in "+?*" and at_start:
                raise Unanswerable("a repetition with nothing to repeat")
            else:
                out.append(char)
                starts_next = char in "(|"
        elif char == ".":
            out.append(".")
        elif char == "*":
            out.append("*")
        else:
            out.append(re.escape(char))
        at_start = starts_next
    return "".join(out)


def _bracket(pattern: str, start: int) -> tuple[int, str]:
    """A bracket expression from `start` (its `[`): (index after it, its Python form)."""
    i = start + 1
    out = ["["]
    if i < len(pattern) and pattern[i] == "^":
        out.append("^")
        i += 1
    first = True
    while i < len(pattern):
        char = pattern[i]
        if char == "]" and not first:
            out.append("]")
            return i + 1, "".join(out)
        first = False
        if pattern.startswith("[:", i):
            end = pattern.find(":]", i + 2)
            name = pattern[i + 2 : end] if end > 0 else ""
            if name not in _CLASSES:
                raise Unanswerable(f"the class [:{name}:] in a pattern")
            out.append(_CLASSES[name])
            i = end + 2
        elif pattern.startswith("[=", i) or pattern.startswith("[.", i):
            raise Unanswerable("a collating element or equivalence class in a pattern")
        elif char in "\\[]^":
            out.append("\\" + char)
            i += 1
        elif char == "-":
            out.append("-")
            i += 1
        else:
            out.append(re.escape(char) if not char.isalnum() else char)
            i += 1
    raise Unanswerable("an unterminated bracket expression")
