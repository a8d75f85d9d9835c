"""`ShellWorld`: one session's shell as the state knows it, and how it starts.

The virtual filesystem, the working directory, the shell's variables and the last exit
code. A variable whose value is None was set by a command the state could not follow:
reading it cannot be answered. `clock` is the time the state stamps on what it writes
(seconds since the epoch): the caller sets it (the state itself reads no clock, so it
stays deterministic). Everything is plain data: `to_json()` / `from_json()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from backends.world_state.shell import caps, sandbox
from backends.world_state.shell.filesystem import DIR, FILE, FileSystem, Node, normalize, parent_of


@dataclass(slots=True)
class ShellWorld:
    fs: FileSystem = field(default_factory=FileSystem)
    cwd: str = sandbox.WORKSPACE
    env: dict[str, str | None] = field(default_factory=lambda: dict(sandbox.ENV))
    exit_code: int = 0
    clock: float = 0.0

    def copy(self) -> ShellWorld:
        return ShellWorld(self.fs.copy(), self.cwd, dict(self.env), self.exit_code, self.clock)

    def take(self, other: ShellWorld) -> None:
        """Becomes `other` (a copy the executor worked on): the caller's object changes in place."""
        self.fs, self.cwd, self.env, self.exit_code, self.clock = (
            other.fs,
            other.cwd,
            other.env,
            other.exit_code,
            other.clock,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "cwd": self.cwd,
            "env": dict(self.env),
            "exit_code": self.exit_code,
            "clock": self.clock,
            "counter": self.fs.counter,
            "paths": {path: node.to_json() for path, node in self.fs.nodes.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ShellWorld:
        nodes = {str(path): Node.from_json(node) for path, node in dict(data.get("paths") or {}).items()}
        return cls(
            FileSystem(nodes, counter=int(data.get("counter", len(nodes)))),
            str(data.get("cwd", sandbox.WORKSPACE)),
            {str(k): (None if v is None else str(v)) for k, v in dict(data.get("env") or sandbox.ENV).items()},
            int(data.get("exit_code", 0)),
            float(data.get("clock", 0.0)),
        )


def new_world(*, clock: float = 0.0) -> ShellWorld:
    """A fresh sandbox: an empty /workspace and home, a /tmp holding only the channel's
    own file, and the image's directories on the way to them (their listings unknown)."""
    fs = FileSystem()
    for path, (mode, owner, links, size, blocks) in sandbox.IMAGE_DIRS.items():
        fs.put(path, Node(DIR, mode, complete=False, owner=owner, mtime=clock, fixed=(links, size, blocks)))
    for path, (mode, owner) in sandbox.MOUNTS.items():
        fs.put(path, Node(DIR, mode, owner=owner, mtime=clock))
    fs.put(sandbox.COMMAND_START_FILE, Node(FILE, sandbox.FILE_MODE, content=None, mtime=clock))
    return ShellWorld(fs, clock=clock)


def seed_files(world: ShellWorld, files: Mapping[str, str]) -> None:
    """An episode's initial files (path under /workspace -> text), as the episode host
    writes them into a real sandbox: missing folders made, modes from the umask."""
    for relative, text in files.items():
        path = normalize(relative, sandbox.WORKSPACE)
        _make_parents(world, path)
        world.fs.put(path, Node(FILE, sandbox.FILE_MODE, content=text, mtime=world.clock))
    caps.enforce(world.fs)


def _make_parents(world: ShellWorld, path: str) -> None:
    missing = []
    ancestor = parent_of(path)
    while ancestor not in world.fs.nodes:
        missing.append(ancestor)
        ancestor = parent_of(ancestor)
    for directory in reversed(missing):
        world.fs.put(directory, Node(DIR, sandbox.DIR_MODE, mtime=world.clock))
