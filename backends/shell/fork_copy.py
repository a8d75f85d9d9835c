"""Copying a session's shell state from its sandbox into a fork's.

What is copied: the files of `/workspace`, `/tmp` and `$HOME` (the only places a
sandbox can write: its root filesystem is read-only, so `docker commit` would miss
them), the working directory and the exported variables. What is not: background
processes, shell functions and unexported variables.

The files travel as one `tar` stream, read from the real sandbox (nothing there is
written) and unpacked in the fork as it comes, both by the sandbox user; their size
is measured first (`du`), so a state over the limit is refused before anything is
copied.
"""

from __future__ import annotations

import base64
import re
import shlex
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from backends.docker_engine import ENGINE_ERRORS
from backends.shell.bash_stream import COMMAND_START_FILE, close_exec_socket
from backends.shell.container import HOME, USER, WORKSPACE
from backends.shell.docker_shell import DockerShell

FOLDERS = (WORKSPACE, "/tmp", HOME)
_FRAME = struct.Struct(">BxxxL")  # a non-TTY exec's frame header: stream id, 3 zero bytes, big-endian length
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Set by bash itself, or by the cd that restores the working directory.
_NOT_RESTORED = frozenset({"_", "SHLVL", "PWD"})


class ForkCopyError(Exception):
    """The state could not be copied (too large, unreadable, refused by tar): the message says why."""


@dataclass(slots=True)
class ForkedState:
    """A sandbox's state as a fork receives it."""

    sizes: dict[str, int] = field(default_factory=dict)  # bytes per folder
    archive_bytes: int = 0  # the tar stream as copied
    cwd: str | None = None
    variables: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """What records and `_meta.simroute` say was copied."""
        return {
            "folders": dict(self.sizes),
            "bytes": sum(self.sizes.values()),
            "archive_bytes": self.archive_bytes,
            "cwd": self.cwd,
            "variables": len(self.variables),
        }


def measure(shell: DockerShell) -> dict[str, int]:
    """Bytes under each forked folder of `shell`'s sandbox (`du -sb`; blocking)."""
    stdout, stderr, code = _run(shell, ["du", "-sb", *FOLDERS])
    sizes: dict[str, int] = {}
    for line in stdout.decode("utf-8", "replace").splitlines():
        size, _, path = line.partition("\t")
        if size.isdigit():
            sizes[path] = int(size)
    if set(sizes) != set(FOLDERS):
        raise ForkCopyError(
            f"the sandbox's size could not be measured (du exit code {code}: {stderr.decode('utf-8', 'replace')[:200]})"
        )
    return sizes


def copy_files(source: DockerShell, target: DockerShell, *, limit: int, timeout_s: float) -> int:
    """Stream the forked folders' contents from `source`'s sandbox into `target`'s: `tar -c`
    in one, its output sent on as it comes to `tar -x` in the other (nothing kept here);
    the bytes copied. The folders' children, not the folders themselves: the fork's mount
    points keep their own owner and mode (the sandbox user may not change /tmp's). Refused
    past `limit` bytes or `timeout_s` (blocking)."""
    folders = " ".join(folder.lstrip("/") for folder in FOLDERS)
    script = (
        f"cd / && find {folders} -mindepth 1 -maxdepth 1 ! -path {COMMAND_START_FILE.lstrip('/')} -print0 "
        "| tar -c --null -T -"
    )
    deadline = time.monotonic() + timeout_s
    try:
        unpack_id = target.client.api.exec_create(target.container.id, ["tar", "-x", "-C", "/"], stdin=True, user=USER)[
            "Id"
        ]
        unpack = target.client.api.exec_start(unpack_id, socket=True)
    except ENGINE_ERRORS as exc:
        raise ForkCopyError(f"the Docker engine refused tar in the fork: {exc}") from exc
    try:
        try:
            pack_id = source.client.api.exec_create(source.container.id, ["sh", "-c", script], user=USER)["Id"]
            pack = source.client.api.exec_start(pack_id, socket=True)
        except ENGINE_ERRORS as exc:
            raise ForkCopyError(f"the Docker engine refused tar in the sandbox: {exc}") from exc
        try:
            errors = bytearray()
            copied = _relay(pack._sock, unpack._sock, errors, limit=limit, deadline=deadline)
        except OSError as exc:
            raise ForkCopyError(f"copying the sandbox's files failed: {exc}") from exc
        finally:
            close_exec_socket(pack)
        unpack._sock.shutdown(socket.SHUT_WR)
        while time.monotonic() < deadline and unpack._sock.recv(65536):  # until tar -x has finished
            pass
    except OSError as exc:
        raise ForkCopyError(f"unpacking the files in the fork failed: {exc}") from exc
    finally:
        close_exec_socket(unpack)
    code = source.client.api.exec_inspect(pack_id).get("ExitCode")
    if code != 0:
        raise ForkCopyError(
            f"reading the sandbox's files failed (tar exit code {code}: {errors.decode('utf-8', 'replace')[:200]})"
        )
    code = target.client.api.exec_inspect(unpack_id).get("ExitCode")
    if code != 0:
        raise ForkCopyError(f"unpacking the files in the fork failed (tar exit code {code})")
    return copied


def _relay(source: socket.socket, target: socket.socket, errors: bytearray, *, limit: int, deadline: float) -> int:
    """A non-TTY exec's multiplexed output (an 8-byte header per frame): stdout sent on to
    `target`, stderr kept in `errors`, until it ends; the stdout bytes sent."""
    buffer, sent = bytearray(), 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ForkCopyError("copying the sandbox's files took longer than fork.copy_timeout_s")
        source.settimeout(remaining)
        target.settimeout(remaining)
        chunk = source.recv(1 << 20)
        if not chunk:
            return sent
        buffer += chunk
        out = bytearray()
        while len(buffer) >= _FRAME.size:
            stream, length = _FRAME.unpack_from(buffer)
            if len(buffer) < _FRAME.size + length:
                break
            (out if stream == 1 else errors).extend(buffer[_FRAME.size : _FRAME.size + length])
            del buffer[: _FRAME.size + length]
        if out:
            target.sendall(out)
            sent += len(out)
        if sent > limit:
            raise ForkCopyError(
                f"the sandbox's archive grew past {limit} bytes (twice fork.max_bytes and a margin) while it was copied"
            )


async def read_shell(shell: DockerShell, state: ForkedState, *, timeout_s: float) -> None:
    """The working directory and exported variables of `shell`'s persistent shell (a
    command of its own that reads them and changes nothing)."""
    result = await shell.exec("env -0 | base64 -w0", timeout_s=timeout_s)
    if result.exit_code != 0 or result.truncated:
        raise ForkCopyError(f"the shell's exported variables could not be read (exit code {result.exit_code})")
    state.cwd = result.cwd
    for entry in base64.b64decode(result.output.strip()).split(b"\0"):
        name, sep, value = entry.decode("utf-8", "replace").partition("=")
        if sep and _NAME.fullmatch(name) and name not in _NOT_RESTORED:
            state.variables[name] = value


def restore_script(state: ForkedState) -> str:
    """The command that gives the fork's shell the copied working directory and exported
    variables (exported ones the real shell no longer has are unset)."""
    keep = " ".join(sorted({*state.variables, *_NOT_RESTORED}))
    lines = [f'for __v in $(compgen -e); do case " {keep} " in *" $__v "*) ;; *) unset "$__v" ;; esac; done; unset __v']
    lines += [f"export {name}={shlex.quote(value)}" for name, value in sorted(state.variables.items())]
    if state.cwd:
        lines.append(f"cd -- {shlex.quote(state.cwd)}")
    return "\n".join(lines)


def _run(shell: DockerShell, argv: list[str]) -> tuple[bytes, bytes, int | None]:
    try:
        result = shell.container.exec_run(argv, user=USER, demux=True)
    except ENGINE_ERRORS as exc:
        raise ForkCopyError(f"the Docker engine refused {argv[0]} in the sandbox: {exc}") from exc
    stdout, stderr = result.output
    return stdout or b"", stderr or b"", result.exit_code
