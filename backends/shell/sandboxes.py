"""`Sandboxes`: the real side of the shell channel, one `DockerShell` per agent session.

A warm pool of started sandboxes (container + bootstrapped shell) makes a new
session's first command as fast as its second. Sandboxes are removed when their
session closes (explicitly, on idle TTL, or while it is still starting) and
when the router stops, however it stops: each container is tied to this
process's life (owned.py). What a router killed mid-`docker run` leaves is
reaped when the next one starts.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from backends.docker_engine import ENGINE_ERRORS, docker_client, require_image
from backends.errors import BackendError, BackendUnavailable
from backends.shell.container import reap_orphans
from backends.shell.docker_shell import DockerShell, WorkspaceCopyError
from backends.shell.options import ShellConfig
from backends.shell.owned import OwnedContainers, SandboxesClosed, remove_container
from backends.shell.screen import ShellResult
from records.owners import this_process_owner

log = logging.getLogger("simroute.shell")

_RETRY_ENGINE_AFTER_S = 10.0


class _Opening:
    """A session's sandbox being started. `_open` knows the session still wants it while
    this very object is the session's entry (not by the running task's identity, which
    an eager task factory has not handed out yet when the opening ends in its first step)."""

    __slots__ = ("task",)
    task: asyncio.Task[DockerShell]


class Sandboxes:
    def __init__(self, config: ShellConfig, *, workspace: Path | None = None, warm_pool: bool = True) -> None:
        self.config = config
        self.workspace = workspace
        # Off when no route of the config can reach a real shell (e.g. a sim-only rehearsal).
        self.warm_pool = warm_pool
        self.client: Any = None
        self._owner = this_process_owner()
        self._unavailable: str | None = None
        self._checked_at = 0.0
        self._sessions: dict[str, DockerShell] = {}
        self._opening: dict[str, _Opening] = {}
        self._ready: list[DockerShell] = []
        self._wanted = asyncio.Event()
        self._filler: asyncio.Task[None] | None = None
        self._owned: OwnedContainers | None = None  # every container started, tied to this process's life
        self._closing = False
        # Asked before a session's sandbox is opened here (with several replicas: is the
        # session's sandbox on another one?); raises BackendUnavailable to refuse it.
        self.before_open: Callable[[str], Awaitable[None]] | None = None
        self.after_close: Callable[[str], Awaitable[None]] | None = None  # told when a session's sandbox closed

    # --- lifecycle ----------------------------------------------------------------

    async def start(self) -> Sandboxes:
        """Connect to the engine, reap orphans, start filling the pool. Without an
        engine the router still starts: the real route reports why, sim works."""
        if await self._connect():
            try:
                removed, failed = await asyncio.to_thread(reap_orphans, self.client)
            except ENGINE_ERRORS as exc:  # e.g. the engine refused the listing: leftovers wait for a later start
                removed, failed = [], [f"listing sandboxes failed: {exc}"]
            if removed:
                log.info("removed %d sandboxes left by a stopped router: %s", len(removed), ", ".join(removed))
            for failure in failed:
                log.warning("could not remove a sandbox left by a stopped router (%s); starting anyway", failure)
            if self.warm_pool and self.config.pool_size > 0:
                self._filler = asyncio.get_running_loop().create_task(self._fill_forever(), name="simroute-shell-pool")
        return self

    async def _connect(self) -> bool:
        if self.client is not None and self._unavailable is None:
            return True
        self._checked_at = time.monotonic()
        try:
            self.client = await asyncio.to_thread(docker_client, fallback="route shell calls to sim")
            await asyncio.to_thread(
                require_image, self.client, self.config.image, what="sandbox", setting="shell.image"
            )
        except BackendUnavailable as exc:
            self._unavailable = str(exc)
            log.warning("shell: %s", exc)
            return False
        self._unavailable = None
        self._owned = OwnedContainers(self.client)
        return True

    async def aclose(self) -> None:
        """Remove every sandbox. The first step needs no await: each sandbox's
        lifeline is cut at once, so the engine removes them all in parallel even
        if this process is killed right after (an MCP client gives ~2 s)."""
        self._closing = True
        leftovers = self._owned.close_all() if self._owned is not None else []
        if self._filler is not None:
            self._filler.cancel()
        openings = [opening.task for opening in self._opening.values()]
        shells = list(self._sessions.values()) + self._ready
        self._sessions.clear()
        self._ready.clear()
        outcomes = await asyncio.gather(
            *(asyncio.to_thread(remove_container, container) for container in leftovers),
            *(shell.aclose() for shell in shells),
            *openings,  # refused from now on; one already past `docker run` removes its own
            *([self._filler] if self._filler is not None else []),
            return_exceptions=True,
        )
        self._filler = None
        for outcome in outcomes:
            # Each removal goes on whatever the others do; a failure is said, not raised.
            if isinstance(outcome, Exception) and not isinstance(outcome, SandboxesClosed):
                log.warning("shell: removing a sandbox at shutdown: %s", outcome)

    # --- sessions -----------------------------------------------------------------

    async def exec(self, session_id: str, command: str, *, timeout_s: float) -> ShellResult:
        shell = await self.shell_for(session_id)
        return await shell.exec(command, timeout_s=timeout_s)

    async def shell_for(self, session_id: str) -> DockerShell:
        shell = self._sessions.get(session_id)
        if shell is not None:
            return shell
        opening = self._opening.get(session_id)
        if opening is None and self.before_open is not None:
            await self.before_open(session_id)
            shell = self._sessions.get(session_id)  # opened by a call that did not wait for the claim
            if shell is not None:
                return shell
            opening = self._opening.get(session_id)
        if opening is None:
            # Registered before the task exists: under an eager task factory (mitmproxy sets
            # one on the loop it runs on, as in `simroute serve`) the task's first step runs
            # inside `create_task`, and a warm sandbox makes that step the whole opening.
            opening = self._opening[session_id] = _Opening()
            opening.task = asyncio.get_running_loop().create_task(
                self._open(session_id, opening), name=f"simroute-shell-open-{session_id}"
            )
        # Shielded: one caller giving up does not abandon a sandbox half-started.
        return await asyncio.shield(opening.task)

    async def _open(self, session_id: str, opening: _Opening) -> DockerShell:
        try:
            shell = await self._started_and_prepared()
        finally:
            still_wanted = self._opening.get(session_id) is opening
            if still_wanted:
                del self._opening[session_id]
        if not still_wanted or self._closing:
            # The session closed (or the router is stopping) while its sandbox started.
            await shell.aclose()
            why = "simroute is stopping" if self._closing else "the agent session closed"
            raise BackendUnavailable(f"{why} while its sandbox was starting; the sandbox was removed")
        self._sessions[session_id] = shell
        return shell

    async def _started_and_prepared(self) -> DockerShell:
        return await self.spare(prepared=True)

    async def spare(self, *, prepared: bool, network: bool | None = None) -> DockerShell:
        """A started sandbox of no session (from the warm pool when it has the network
        asked for), `prepared` with the initial workspace or empty; the caller owns it."""
        if self._unavailable is not None and time.monotonic() - self._checked_at > _RETRY_ENGINE_AFTER_S:
            await self._connect()
        if self._unavailable is not None or self._owned is None:
            raise BackendUnavailable(f"the shell's real route needs a Docker sandbox: {self._unavailable}")
        config = (
            self.config
            if network in (None, self.config.network)
            else self.config.model_copy(update={"network": network})
        )
        shell = self._ready.pop(0) if self._ready and config is self.config else None
        self._wanted.set()
        if shell is None:
            shell = await DockerShell(self._owned, config, owner=self._owner).start()
        if not prepared:
            return shell
        shell.on_replaced = self._prepare
        try:
            await self._prepare(shell)
        except BaseException as exc:
            await asyncio.shield(shell.aclose())
            if isinstance(exc, WorkspaceCopyError):
                raise BackendUnavailable(f"the sandbox could not be prepared, so it was removed: {exc}") from exc
            raise
        return shell

    async def _prepare(self, shell: DockerShell) -> None:
        if self.workspace is not None:
            await shell.copy_workspace(self.workspace)

    async def close_session(self, session_id: str) -> None:
        held = self.holds(session_id)
        try:
            await self._close_session(session_id)
        finally:
            if held and self.after_close is not None:
                await self.after_close(session_id)

    async def _close_session(self, session_id: str) -> None:
        shell = self._sessions.pop(session_id, None)
        if shell is not None:
            await shell.aclose()
        opening = self._opening.pop(session_id, None)
        if opening is not None:
            # Not cancelled (a `docker run` in a worker thread cannot be): it sees
            # the session gone when it finishes and removes its sandbox itself.
            (outcome,) = await asyncio.gather(opening.task, return_exceptions=True)
            if isinstance(outcome, Exception) and not isinstance(
                outcome, BackendUnavailable
            ):  # that one is the expected end
                log.warning("shell: a sandbox still starting when its session closed failed: %s", outcome)

    def real_shell(self, session_id: str) -> DockerShell | None:
        """The session's started sandbox, if it has one (a fork reads its state)."""
        return self._sessions.get(session_id)

    def holds(self, session_id: str) -> bool:
        """Whether this session has a real sandbox (started, or starting)."""
        return session_id in self._sessions or session_id in self._opening

    @property
    def ready(self) -> int:
        """Sandboxes started and waiting in the warm pool."""
        return len(self._ready)

    @property
    def in_use(self) -> int:
        """Sandboxes held by agent sessions."""
        return len(self._sessions)

    # --- the warm pool ----------------------------------------------------------------

    async def _fill_forever(self) -> None:
        while True:
            while len(self._ready) < self.config.pool_size:
                assert self._owned is not None  # the pool fills only after the engine answered
                try:
                    shell = await DockerShell(self._owned, self.config, owner=self._owner).start()
                except SandboxesClosed:
                    return
                except (BackendError, OSError) + ENGINE_ERRORS as exc:  # logged; sessions then start cold
                    log.warning("shell pool: could not start a sandbox: %s", exc)
                    await asyncio.sleep(5)
                    continue
                if self._closing:  # stopped while it started (a cancelled wait does not stop the thread)
                    await shell.aclose()
                    return
                self._ready.append(shell)
            self._wanted.clear()
            await self._wanted.wait()

    async def wait_ready(self, timeout_s: float = 60.0) -> None:
        """Until the pool is full (for tests and benchmarks)."""
        deadline = time.monotonic() + timeout_s
        while len(self._ready) < self.config.pool_size and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
