"""The part of a shell's world state a command line touches, told to the world model
when the state cannot answer the line itself (`model+state`), and the check that its
answer does not contradict the state: a file the state holds is not "missing", the
working directory is the state's unless the line changes it."""

from __future__ import annotations

import re

from backends.shell.screen import ShellResult
from backends.world_state.shell import ShellWorld
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR, FILE, normalize
from backends.world_state.shell.touched import touched

SHOWN_CHARS = 1200  # of a file's content in the prompt: the history keeps the rest of the room
SHOWN_NAMES = 60
_CD = re.compile(r"(^|[\s;&|(])(cd|pushd|popd)(\s|$)")


def state_view(world: ShellWorld, command: str) -> str:
    """What the state holds of the paths `command` names and of its working directory."""
    lines = [f"Working directory: {world.cwd}", f"Exit code of the previous command: {world.exit_code}"]
    here = _listing(world, world.cwd)
    if here is not None:
        lines.append(f"Entries of {world.cwd}: {here or '(empty)'}")
    for written in sorted(touched(command).paths)[:12]:
        path = normalize(written, world.cwd)
        try:
            node = world.fs.lookup(path)
        except Unanswerable:
            continue
        if node is None:
            lines.append(f"{path}: does not exist")
        elif node.kind == FILE and node.content is not None:
            text = node.content if len(node.content) <= SHOWN_CHARS else node.content[:SHOWN_CHARS] + "…"
            lines.append(f"{path}: a file holding:\n{text}")
        elif node.kind == DIR:
            listing = _listing(world, path)
            lines.append(f"{path}: a directory" + (f" holding: {listing or '(empty)'}" if listing is not None else ""))
    return "## The shell's state before this command (facts: do not contradict them)\n" + "\n".join(lines)


def contradiction(world: ShellWorld, command: str, result: ShellResult) -> str | None:
    """Why a simulated answer contradicts the state (None: it does not)."""
    for written in touched(command).paths:
        path = normalize(written, world.cwd)
        try:
            node = world.fs.lookup(path)
        except Unanswerable:
            continue
        if node is not None and f"{written}: No such file or directory" in result.output:
            return f"{path} exists (the shell's state holds it), yet the answer says it does not"
    if result.cwd is not None and result.cwd != world.cwd and not _CD.search(command):
        return f"the working directory is {world.cwd}, not {result.cwd}: the command does not change it"
    return None


def _listing(world: ShellWorld, directory: str) -> str | None:
    try:
        names = world.fs.names(directory)
    except (Unanswerable, KeyError):
        return None
    shown = [name for name in names if not name.startswith(".")][:SHOWN_NAMES]
    return " ".join(shown)
