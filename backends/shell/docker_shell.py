"""`DockerShell`: one agent session's sandbox, a container and its persistent shell.

Commands run one at a time. A command past its deadline answers at once with
its partial output; the sandbox then recovers in the background before the
next command runs: first the command's processes are killed (the shell and
earlier background jobs live on), then, if the shell does not come back, the
shell is restarted, and if the container cannot even run that (a fork bomb
holding every pid), the container is replaced. The next result says so.
"""

from __future__ import annotations

import asyncio
import io
import logging
import select
import socket
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

from backends.docker_engine import ENGINE_ERRORS
from backends.errors import BackendBroken, BadBackendInput
from backends.shell.bash_stream import (
    COMMAND_START_FILE,
    BashStream,
    ProcessUse,
    RawOutcome,
    ShellGone,
    close_exec_socket,
)
from backends.shell.container import HOME, USER, WORKSPACE, create_options
from backends.shell.options import ShellConfig
from backends.shell.owned import OwnedContainers
from backends.shell.screen import BoundedCapture, ShellResult, trim_screen

log = logging.getLogger("simroute.shell")

_START_DEADLINE_S = 20.0
_INTERRUPT_GRACE_S = 2.0
_PROBE_DEADLINE_S = 2.0
_pids_unreadable_said = False


class SandboxBroken(BackendBroken):
    """The container cannot run anything any more (the runtime refuses to start a
    process, or a helper command failed). Raised by `DockerShell`'s own helpers;
    it replaces the container and says so in the next result."""


class WorkspaceCopyError(BadBackendInput):
    """The session's initial workspace could not be put into its sandbox (the
    folder cannot be read, or `tar` in the sandbox refused it). `Sandboxes`
    removes the sandbox and raises BackendUnavailable naming this cause."""


class DockerShell:
    def __init__(self, owned: OwnedContainers, config: ShellConfig, *, owner: str) -> None:
        self.owned = owned
        self.client = owned.client
        self.config = config
        self.owner = owner
        self.container: Any = None
        self.stream: BashStream | None = None
        self._lock = asyncio.Lock()
        self._recovery: asyncio.Task[None] | None = None
        self._reset_note: str | None = None
        # Called after the container was replaced (e.g. to copy the initial workspace in again).
        self.on_replaced: Any = None

    # --- lifecycle (blocking parts run in a worker thread) ------------------------

    async def start(self) -> DockerShell:
        await asyncio.to_thread(self._start_blocking)
        return self

    def _start_blocking(self) -> None:
        self.container = self.owned.start(create_options(self.config, owner=self.owner))
        try:
            self.stream = self._open_shell()
        except BaseException:
            self._remove_blocking()  # logs a removal that fails: the shell's error is the one raised
            raise

    def _open_shell(self) -> BashStream:
        """A bootstrapped bash in the container. Raises ShellGone when the engine
        refuses the exec or the shell does not come up."""
        try:
            exec_id = self.client.api.exec_create(
                self.container.id,
                ["bash", "--noprofile", "--norc"],
                stdin=True,
                stdout=True,
                stderr=True,
                tty=False,
                user=USER,
                workdir=WORKSPACE,
                environment={"HOME": HOME},
            )["Id"]
            wrapper = self.client.api.exec_start(exec_id, socket=True)
        except ENGINE_ERRORS as exc:
            raise ShellGone(f"the Docker engine did not start the sandbox shell: {exc}") from exc
        stream = BashStream(
            wrapper._sock, wrapper, head_bytes=self.config.screen_chars, tail_bytes=self.config.screen_chars * 2
        )
        try:
            stream.bootstrap(_START_DEADLINE_S)
        except (OSError, ValueError) as exc:  # the socket failed, or the shell printed no pid
            stream.close()
            raise ShellGone(f"the sandbox shell did not start: {exc}") from exc
        return stream

    async def copy_workspace(self, folder: Path) -> None:
        """Copy `folder`'s contents into /workspace (the session's initial state).
        Through `tar` in the container: the root filesystem is read-only and the
        workspace a tmpfs, which the engine's archive API cannot write into."""
        await asyncio.to_thread(self._copy_workspace_blocking, folder)

    def _copy_workspace_blocking(self, folder: Path) -> None:
        archive = io.BytesIO()
        try:
            with tarfile.open(fileobj=archive, mode="w") as tar:
                for child in sorted(folder.iterdir()):
                    tar.add(child, arcname=child.name, filter=_owned_by_agent)
        except OSError as exc:
            raise WorkspaceCopyError(f"the workspace {folder} cannot be read: {exc.strerror or exc}") from exc
        try:
            code = self._untar_blocking(archive.getvalue())
        except ENGINE_ERRORS + (OSError,) as exc:  # the engine refused the exec, or its socket broke
            raise WorkspaceCopyError(f"copying the workspace {folder} into the sandbox failed: {exc}") from exc
        if code != 0:
            raise WorkspaceCopyError(f"copying the workspace {folder} into the sandbox failed (tar exit code {code})")

    def _untar_blocking(self, archive: bytes) -> int | None:
        """Unpack `archive` into /workspace with `tar` in the container; its exit code."""
        exec_id = self.client.api.exec_create(self.container.id, ["tar", "-x", "-C", WORKSPACE], stdin=True, user=USER)[
            "Id"
        ]
        wrapper = self.client.api.exec_start(exec_id, socket=True)
        sock: socket.socket = wrapper._sock
        try:
            sock.sendall(archive)
            sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                readable, _, _ = select.select([sock], [], [], 1.0)
                if readable and not sock.recv(65536):
                    break
        finally:
            close_exec_socket(wrapper)
        return self.client.api.exec_inspect(exec_id).get("ExitCode")

    async def aclose(self) -> None:
        if self._recovery is not None:
            self._recovery.cancel()
            (outcome,) = await asyncio.gather(self._recovery, return_exceptions=True)
            if isinstance(outcome, Exception):  # the sandbox goes anyway: said, not raised
                log.warning(
                    "sandbox %s: recovering it failed before it was removed: %s",
                    getattr(self.container, "name", "?"),
                    outcome,
                )
        await asyncio.to_thread(self._remove_blocking)

    def _remove_blocking(self) -> None:
        if self.stream is not None:
            self.stream.close()
        if self.container is not None:
            try:
                self.owned.release(self.container)
            except ENGINE_ERRORS as exc:  # its lifeline is cut: the engine removes it anyway
                log.warning("removing sandbox %s: %s", self.container.name, exc)

    # --- commands ---------------------------------------------------------------

    async def exec(self, command: str, *, timeout_s: float) -> ShellResult:
        async with self._lock:
            if self._recovery is not None:
                await self._recovery
                self._recovery = None
            if self.stream is None or not self.stream.alive:
                await self._restore("the previous shell exited")
            if await self._process_limit_reached():
                # A fork bomb left running by the previous command (it filled the limit after its end line).
                await self._replace(
                    f"the previous command filled the sandbox's process limit ({self.config.limits.pids}), "
                    "so it was replaced with a fresh one (files reset)"
                )
            reset, self._reset_note = self._reset_note, None
            cancel = threading.Event()
            assert self.stream is not None
            work = asyncio.ensure_future(
                asyncio.to_thread(self.stream.run, command, deadline_s=timeout_s, cancel=cancel)
            )
            try:
                raw = await asyncio.shield(work)
            except asyncio.CancelledError:
                # The agent gave up: stop reading, then stop the command, off its path.
                cancel.set()
                self._recovery = asyncio.get_running_loop().create_task(
                    self._after_cancel(work), name="simroute-shell-recover"
                )
                raise
            result = self._result(raw, timeout_s, reset)
            if raw.exit_code is not None and await self._process_limit_reached():
                # A fork bomb left running: nothing more runs in this sandbox.
                result.error = (
                    f"the command filled the sandbox's process limit ({self.config.limits.pids}); "
                    "the sandbox was replaced with a fresh one (files reset)"
                )
                await self._replace(
                    f"the previous command filled the sandbox's process limit ({self.config.limits.pids}), "
                    "so it was replaced with a fresh one (files reset)"
                )
                return result
            if raw.timed_out:
                self._recovery = asyncio.get_running_loop().create_task(
                    self._interrupt(raw), name="simroute-shell-recover"
                )
            return result

    def _result(self, raw: RawOutcome, timeout_s: float, reset: str | None) -> ShellResult:
        output, dropped = raw.capture.text()
        output, trimmed = trim_screen(output, max_lines=self.config.screen_lines, max_chars=self.config.screen_chars)
        error = None
        if raw.shell_ended:
            error = "the shell exited; the next command starts a new one"
        elif raw.timed_out:
            error = f"the command did not finish within {timeout_s:g}s and was stopped"
        return ShellResult(
            output,
            raw.exit_code,
            raw.cwd,
            timed_out=raw.timed_out,
            truncated=dropped or trimmed,
            reset=reset,
            error=error,
        )

    async def _after_cancel(self, work: asyncio.Future[RawOutcome]) -> None:
        raw = await work
        if not (raw.shell_ended or raw.exit_code is not None):
            await self._interrupt(raw)

    async def _interrupt(self, raw: RawOutcome) -> None:
        """Stop the command that overran, so the shell is ready for the next one."""
        assert self.stream is not None
        try:
            await asyncio.to_thread(self._kill_command_blocking)
            drained = await asyncio.to_thread(self._drain_blocking)
            if drained:
                return
            await asyncio.to_thread(self._exec_blocking, ["kill", "-KILL", str(self.stream.pid)])
            self.stream.close()
            await self._restore(
                "the previous command could not be stopped, so the shell was restarted "
                "(working directory and environment reset; files kept)"
            )
        except SandboxBroken as exc:
            log.warning("sandbox %s broken (%s): replacing it", self.container.name, exc)
            await self._replace(
                f"the sandbox stopped responding ({exc}), so it was replaced with a fresh one (files reset)"
            )

    def _kill_command_blocking(self) -> None:
        # Children of the shell that started after the command did are the command's;
        # older ones are background jobs of earlier commands and live on. Start times
        # come from /proc in clock ticks (10 ms), compared with the command's start
        # (a job started within 10 ms before it counts as the command's).
        assert self.stream is not None
        script = (
            f"start=$(cat {COMMAND_START_FILE}) || exit 0; "
            f"for p in $(ps -o pid= --ppid {self.stream.pid}); do "
            'st=$(cut -d")" -f2 /proc/$p/stat | cut -d" " -f21); '
            'awk -v s="$st" -v t="$start" "BEGIN{exit !(s/100 >= t-0.01)}" && kill -KILL $p; '
            "done; true"
        )
        self._exec_blocking(["bash", "-c", script])

    async def _process_limit_reached(self) -> bool:
        """Whether a fork was refused by the sandbox's process limit (a fork bomb, even
        one that burnt out on its own and left its error lines behind), or (nearly)
        every pid is taken: either way nothing can be trusted to run there any more.
        A sandbox starts with no refusals and is replaced at the first."""
        use = await asyncio.to_thread(self.pids_in_use)
        if use is None:
            return False
        return bool(use.limit_hits) or use.current >= 0.9 * self.config.limits.pids

    def pids_in_use(self) -> ProcessUse | None:
        """The sandbox's pids cgroup: asked of its idle shell (builtins only, any
        cgroup set-up), else read from the host's cgroup files; None, said once in
        the log, where neither works (a fork bomb is then noticed only when the
        sandbox stops answering)."""
        global _pids_unreadable_said
        if self.stream is not None and self.stream.alive:
            use = self.stream.count_processes(_PROBE_DEADLINE_S)
            if use is not None:
                return use
        cid = self.container.id
        for folder in (f"/sys/fs/cgroup/pids/docker/{cid}", f"/sys/fs/cgroup/system.slice/docker-{cid}.scope"):
            try:
                current = int(Path(folder, "pids.current").read_text())
            except (OSError, ValueError):
                continue
            try:
                hits: int | None = int(Path(folder, "pids.events").read_text().split()[1])
            except (OSError, ValueError, IndexError):
                hits = None
            return ProcessUse(current, hits)
        if not _pids_unreadable_said:
            _pids_unreadable_said = True
            log.warning(
                "the sandbox's process count cannot be read "
                "(neither inside the container nor in the host's cgroup files): "
                "a command that fills the process limit is noticed only when the sandbox stops answering"
            )
        return None

    def _drain_blocking(self) -> bool:
        """Whether the shell printed the overrun command's end line after the kill."""
        assert self.stream is not None
        raw = self.stream.read_until_end(
            self.stream.last_nonce, BoundedCapture(head=0, tail=0), deadline=time.monotonic() + _INTERRUPT_GRACE_S
        )
        return raw.exit_code is not None

    def _exec_blocking(self, argv: list[str]) -> None:
        try:
            result = self.container.exec_run(argv, user=USER)
        except ENGINE_ERRORS as exc:  # the runtime could not start a process (pids exhausted, container gone)
            raise SandboxBroken(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
        if result.exit_code not in (0, None):
            raise SandboxBroken(f"{argv[0]} exited {result.exit_code}")

    async def _restore(self, why: str) -> None:
        """A new shell in the same container, or a new container if that one is gone."""
        if self.stream is not None:
            self.stream.close()
        try:
            self.stream = await asyncio.to_thread(self._open_shell)
            self._reset_note = why
        except ShellGone as exc:
            log.warning("sandbox %s: no new shell (%s): replacing it", getattr(self.container, "name", "?"), exc)
            await self._replace("the previous sandbox stopped, so it was replaced with a fresh one (files reset)")

    async def _replace(self, why: str) -> None:
        await asyncio.to_thread(self._remove_blocking)
        self.container = self.stream = None
        await self.start()
        self._reset_note = why
        if self.on_replaced is not None:
            await self.on_replaced(self)


def _owned_by_agent(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 1000
    info.uname = info.gname = "agent"
    return info
