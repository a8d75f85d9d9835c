"""A host folder copied into a session's sandbox, as an episode's starting workspace
(`options.fork: NAME`, `fork.workspaces`): the folder is read, never written, and the
episode works on its copy, which goes with its sandbox.

The files travel as one `tar` stream made here and unpacked in the sandbox as it
comes, by the sandbox user (`/workspace` is a tmpfs, which `docker cp` cannot write
into); their size is measured first, so a folder over the limit is refused before
anything is copied.
"""

from __future__ import annotations

import os
import socket
import tarfile
import time
from pathlib import Path

from backends.docker_engine import ENGINE_ERRORS
from backends.errors import ForkUnavailable
from backends.shell.bash_stream import close_exec_socket
from backends.shell.container import USER, WORKSPACE
from backends.shell.docker_shell import DockerShell


def folder_bytes(folder: Path) -> int:
    """Bytes under `folder` (files' own sizes, links not followed; blocking)."""
    return sum(os.lstat(os.path.join(root, name)).st_size for root, _, files in os.walk(folder) for name in files)


class _Sender:
    """What tarfile's stream mode writes to: the exec's stdin, within a deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline = sock, deadline

    def write(self, data: bytes) -> int:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise ForkUnavailable("copying the workspace took longer than fork.copy_timeout_s")
        self.sock.settimeout(remaining)
        self.sock.sendall(data)
        return len(data)


def copy_folder(shell: DockerShell, folder: Path, *, limit: int, timeout_s: float) -> int:
    """`folder`'s contents unpacked under the sandbox's /workspace; the bytes measured.
    Raises ForkUnavailable (over `limit`, past `timeout_s`, refused). Blocking."""
    if not folder.is_dir():
        raise ForkUnavailable(f"the workspace {str(folder)!r} is not a folder on this host")
    size = folder_bytes(folder)
    if size > limit:
        raise ForkUnavailable(f"the workspace is {size} bytes, over fork.max_bytes ({limit})")
    deadline = time.monotonic() + timeout_s
    try:
        unpack_id = shell.client.api.exec_create(
            shell.container.id, ["tar", "-x", "-C", WORKSPACE], stdin=True, user=USER
        )["Id"]
        unpack = shell.client.api.exec_start(unpack_id, socket=True)
    except ENGINE_ERRORS as exc:
        raise ForkUnavailable(f"the Docker engine refused tar in the sandbox: {exc}") from exc
    try:
        with tarfile.open(fileobj=_Sender(unpack._sock, deadline), mode="w|") as archive:  # type: ignore[call-overload]
            for child in sorted(folder.iterdir()):
                archive.add(child, arcname=child.name)
        unpack._sock.shutdown(socket.SHUT_WR)
        while time.monotonic() < deadline and unpack._sock.recv(65536):  # until tar -x has finished
            pass
    except OSError as exc:
        raise ForkUnavailable(f"copying the workspace failed: {exc}") from exc
    finally:
        close_exec_socket(unpack)
    code = shell.client.api.exec_inspect(unpack_id).get("ExitCode")
    if code != 0:
        raise ForkUnavailable(f"unpacking the workspace in the sandbox failed (tar exit code {code})")
    return size
