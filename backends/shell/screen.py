"""A command's result as the agent sees it, and the bounded capture behind it.

Output is kept like a terminal keeps it, but with the head too: the first lines
(where errors and headers are) and the last lines (where the result is), with a
marker saying how much was left out. Capture is bounded while reading, so a
command flooding output costs no memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from calls import Turn


@dataclass(slots=True)
class ShellResult:
    output: str
    exit_code: int | None  # None: unknown (timed out, shell died, or a simulation that did not show it)
    cwd: str | None
    timed_out: bool = False
    truncated: bool = False
    reset: str | None = None  # why the sandbox or its shell was replaced before this command
    error: str | None = None  # what went wrong around the command (the shell died, …)

    @property
    def is_error(self) -> bool:
        # A non-zero exit code is the command's answer, not a tool failure (grep finding
        # nothing is not an error of the shell); it is in `exit_code` either way.
        return self.timed_out or self.error is not None

    def status_line(self) -> str:
        parts = []
        if self.timed_out:
            parts.append("timed out; output so far above")
        parts.append(f"exit code {self.exit_code if self.exit_code is not None else 'unknown'}")
        parts.append(f"cwd {self.cwd if self.cwd is not None else 'unknown'}")
        return "[" + ", ".join(parts) + "]"

    def text(self) -> str:
        lines = []
        if self.reset:
            lines.append(f"[sandbox reset: {self.reset}]")
        if self.output:
            lines.append(self.output.rstrip("\n"))
        if self.error:
            lines.append(f"[{self.error}]")
        lines.append(self.status_line())
        return "\n".join(lines)

    def structured(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "exit_code": self.exit_code,
            "cwd": self.cwd,
            "timed_out": self.timed_out,
            "truncated": self.truncated,
            **({"reset": self.reset} if self.reset else {}),
            **({"error": self.error} if self.error else {}),
        }

    @classmethod
    def from_structured(cls, data: dict[str, Any]) -> ShellResult:
        return cls(
            output=str(data.get("output") or ""),
            exit_code=data.get("exit_code"),
            cwd=data.get("cwd"),
            timed_out=bool(data.get("timed_out")),
            truncated=bool(data.get("truncated")),
            reset=data.get("reset"),
            error=data.get("error"),
        )


class BoundedCapture:
    """Keeps the first `head` and the last `tail` bytes of a stream, and counts the rest."""

    def __init__(self, *, head: int, tail: int) -> None:
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        excess = len(self.tail) - self.tail_limit
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def kept(self) -> bytes:
        """The bytes kept (head and tail), without a marker."""
        return bytes(self.head) + bytes(self.tail)

    def text(self) -> tuple[str, bool]:
        """The captured output and whether bytes were dropped. The cut never
        splits a UTF-8 character: one split by it is counted as omitted."""
        if not self.dropped:
            return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace"), False
        head_keep = len(self.head) - _incomplete_at_end(self.head)
        tail_skip = _continuations_at_start(self.tail)
        omitted = self.dropped + (len(self.head) - head_keep) + tail_skip
        return (
            bytes(self.head[:head_keep]).decode("utf-8", "replace")
            + f"\n[... {omitted} bytes of output omitted ...]\n"
            + bytes(self.tail[tail_skip:]).decode("utf-8", "replace"),
            True,
        )


def _incomplete_at_end(data: bytearray) -> int:
    """How many bytes at the end are the start of a UTF-8 character cut short."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 == 0x80:  # a continuation byte: look further back for its lead
            continue
        length = 2 if byte & 0xE0 == 0xC0 else 3 if byte & 0xF0 == 0xE0 else 4 if byte & 0xF8 == 0xF0 else 1
        return back if back < length else 0
    return 0


def _continuations_at_start(data: bytearray) -> int:
    """How many bytes at the start continue a character whose lead was cut off."""
    count = 0
    while count < min(3, len(data)) and data[count] & 0xC0 == 0x80:
        count += 1
    return count


def trim_screen(text: str, *, max_lines: int, max_chars: int) -> tuple[str, bool]:
    """At most `max_lines` lines and about `max_chars` characters: a quarter from
    the start, the rest from the end, and a marker for what was left out."""
    lines = text.split("\n")
    trimmed = False
    if len(lines) > max_lines:
        head_n = max(1, max_lines // 4)
        tail_n = max_lines - head_n
        lines = lines[:head_n] + [f"[... {len(lines) - head_n - tail_n} lines omitted ...]"] + lines[-tail_n:]
        trimmed = True
    text = "\n".join(lines)
    if len(text) > max_chars:
        head_c = max_chars // 4
        tail_c = max_chars - head_c
        text = text[:head_c] + f"\n[... {len(text) - head_c - tail_c} characters omitted ...]\n" + text[-tail_c:]
        trimmed = True
    return text, trimmed


def last_cwd(history: Sequence[Turn]) -> str | None:
    """The working directory the session's last shell answer showed (a fault leaves it)."""
    for turn in reversed(history):
        structured = turn.observation.structured
        if turn.call.channel == "shell" and isinstance(structured, dict) and isinstance(structured.get("cwd"), str):
            return structured["cwd"]
    return None
