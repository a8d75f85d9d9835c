"""What the session's shell is known to be, kept from every route's answer (a session
slice, calls.SessionSlice): its working directory and the last command's exit
code, and which side last said so (`real`, `replay` or `sim`: a simulated answer's
word gives way to the next real one). Kept in the process; the shell's sandbox, which
holds the real state, stays on the replica that opened it."""

from __future__ import annotations

from dataclasses import dataclass

from calls import SessionSlice


@dataclass(slots=True)
class ShellState(SessionSlice):
    cwd: str | None = None
    exit_code: int | None = None
    said_by: str | None = None  # the provenance of the answer these come from
