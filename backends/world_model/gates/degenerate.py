"""Text no tool prints: what a small world model writes when it loses the thread.

Four kinds, each judged on the answer's own text (a screen's output, an HTTP body,
a tool result's text):
- long repetition of a short unit (`git-status-1.0.16:1:1:1:1:…`) or of one line;
- the prompt's own scaffolding echoed back (turn headings, the action and
  observation labels, the answer tags, the system message's task sentences);
- commentary about the simulation instead of the answer ("This is the first
  action in the action space described by…");
- a package-name-like token standing alone (`git-status-1.0.16`) where the tool's
  recorded answers are structured or prose.

A reason names the kind and at most a short marker or unit, never the answer itself:
it reaches the model's retry prompt and the agent's error.

False alarms are kept low two ways: a kind the tool's own recorded answers show is
not held against it (a tool that prints repeated units may), and a fragment the
answer may legitimately repeat (`context`: the call's arguments, the session's
earlier turns; `echo ':1:1:1:1:1:1:1:1'` prints it) is never degenerate.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from backends.world_model.parse import CLOSE_TAG, OPEN_TAG
from backends.world_model.prompt import MARKER

# A unit of 1-16 characters with a letter or digit and a punctuation mark, repeated:
# `:1`, `1.`, `ab-`. Units of letters and spaces alone ("la la la") and rules of
# punctuation alone (`=====`, `+---+`) are left to real programs, which print them.
_REPEATED_UNIT = re.compile(r"(.{1,16}?)\1{7,}", re.DOTALL)
_UNIT_SHAPE = re.compile(r"^(?=.*[^\W_])(?=.*[^\w\s]).+$", re.DOTALL)
MIN_REPEATS = 8
MIN_RUN_CHARS = 16
LONG_REPEATS = 32  # this many repeats are degenerate wherever they stand
MIN_LINE_CHARS = 4  # repeated lines shorter than this (`y`, `ok`) are a program's (`yes`)

# Markers only a prompt carries (prompt.py, parse.py, the domains' system messages,
# steering.py): one is enough.
_STRONG = [
    re.escape(MARKER),
    re.escape(OPEN_TAG),
    re.escape(CLOSE_TAG),
    r"\*\*Action:\*\*",
    r"\*\*Current State:\*\*",
    r"\(A real [\w ]+ in another session",
    r"\[\d+ earlier turns omitted\]",
    r"Think about what the real [\w ]+ would return",
    r"You are (?:the MCP server \"|a Linux terminal: a bash shell|the HTTP server \S+\. An AI agent|a web browser "
    r"\(Chromium)",
    r"An AI agent (?:is calling your tools|types commands|sends it HTTP requests)",
    r"\"keystrokes\"\s*:",
    r"\"inputSchema\"\s*:",
    r"Definition of the tool `",
    r"## Perturbation for this action",
    r"## Your previous answer was refused",
]
_STRONG_MARKER = re.compile("|".join(_STRONG))
# The system message's headings: a README may hold one of them, not two.
_WEAK_MARKER = re.compile(
    r"(?m)^\s*(?:### Turn \d+|## (?:Action space|Initial state|Simulation instruction|Tools))\s*$"
)

# Talk about the simulation, at the start of a line: the prompt's vocabulary (action,
# observation, the agent, predicting) in the sentences a small model writes about it.
_COMMENTARY = re.compile(
    r"(?im)^[\s\"'*>-]*(?:"
    r"(?:this|that|it) is (?:the|an?) "
    r"(?:(?:first|second|third|next|last|previous|current|same|only|expected|real|actual|"
    r"predicted|simulated|new) )?(?:action|observation|prediction)\b(?![-\w])"
    r"|(?:the|this|an) ai agent\b"
    r"|the agent (?:types|typed|wants to|is asking|asked for|is calling|called the)\b"
    r"|(?:the|this|here is the|here's the) (?:predicted|expected|simulated) "
    r"(?:observation|output|screen|response|answer|result)\b"
    r"|(?:in|for) this (?:action|turn)\b(?![-\w])"
    r"|(?:i|we) (?:will|would|cannot|can't|am going to|'ll) (?:now )?(?:predict|simulate)\b"
    r"|as an ai\b"
    r")|\b(?:in|of) the action space\b|\baction space described\b"
)

# `name-1.0.16`, `name==2.1`, `@scope/name@1.2.3`: a name, then a dotted version.
_PACKAGE_TOKEN = re.compile(r"^@?[A-Za-z][\w.+/-]*?(?:[-_@]|==)v?\d+(?:\.\d+)+\S*$")


def degenerate(text: str, *, recorded: Sequence[str] = (), context: str = "") -> str | None:
    """Why `text` is degenerate as a tool's answer, or None. `recorded`: the tool's
    real answers (a kind they show is allowed); `context`: text the answer may repeat."""
    seen = context.casefold()
    for judge in (_repetition, _repeated_lines, _scaffolding, _commentary, _package_token):
        found = judge(text, recorded)
        if found is None:
            continue
        fragment, reason = found
        if fragment and fragment.casefold() in seen:
            continue  # the call or the session said it first
        if any(judge(answer, ()) is not None for answer in recorded):
            continue  # the tool's real answers do it too
        return reason
    return None


Judge = Callable[[str, Sequence[str]], tuple[str, str] | None]


def _repetition(text: str, recorded: Sequence[str]) -> tuple[str, str] | None:
    size = len(text.strip())
    for match in _REPEATED_UNIT.finditer(text):
        unit, run = match.group(1), match.group(0)
        repeats = len(run) // len(unit)
        if repeats < MIN_REPEATS or len(run) < MIN_RUN_CHARS or not _UNIT_SHAPE.match(unit):
            continue
        if repeats >= LONG_REPEATS or 2 * len(run) >= size:
            return run[: len(unit) * MIN_REPEATS], f"long repetition: {unit!r} repeated {repeats} times"
    return None


def _repeated_lines(text: str, recorded: Sequence[str]) -> tuple[str, str] | None:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    best, count, previous, run = "", 0, None, 0
    for line in lines:
        run = run + 1 if line == previous else 1
        previous = line
        if run > count:
            best, count = line, run
    if count >= MIN_REPEATS and len(best) >= MIN_LINE_CHARS and 2 * count >= len(lines):
        return "\n".join([best] * MIN_REPEATS), f"long repetition: the same line {count} times"
    return None


def _scaffolding(text: str, recorded: Sequence[str]) -> tuple[str, str] | None:
    if strong := _STRONG_MARKER.search(text):
        return strong.group(0), f"prompt scaffolding echoed: {strong.group(0)!r}"
    weak = {match.group(0).strip() for match in _WEAK_MARKER.finditer(text)}
    if len(weak) >= 2:
        shown = sorted(weak)[:2]
        return "", f"prompt scaffolding echoed: {shown[0]!r} and {shown[1]!r}"
    return None


def _commentary(text: str, recorded: Sequence[str]) -> tuple[str, str] | None:
    match = _COMMENTARY.search(text)
    if match is None:
        return None
    phrase = match.group(0).strip(" \t\n\"'*>-")
    return phrase, f"commentary about the simulation instead of the answer ({phrase[:40]!r})"


def _package_token(text: str, recorded: Sequence[str]) -> tuple[str, str] | None:
    """Judged only against recorded answers that are all structured or prose."""
    token = text.strip()
    if not _PACKAGE_TOKEN.match(token) or not recorded or any(_bare(answer) for answer in recorded):
        return None
    return token, "a package-like token instead of the tool's answer (its recorded answers are structured or prose)"


def _bare(answer: str) -> bool:
    """A single token, not JSON: the shape a package name has."""
    stripped = answer.strip()
    return bool(stripped) and not stripped.startswith(("{", "[")) and not any(c.isspace() for c in stripped)
