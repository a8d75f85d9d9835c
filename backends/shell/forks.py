"""`ShellForks`: each session's fork of its shell, where calls routed `fork` run.

A fork is a fresh sandbox with the session's limits and no network, given a copy
of the session's real state (fork_copy.py) at the session's first forked call: from
then on every forked call of the session runs there, in one world that diverged
from the real one, which is never touched. Without a real sandbox yet, the fork
starts from the initial workspace, as the real one would.

Forks are removed with their session (close, idle TTL) and when the router stops
(they are started through the sandboxes' owned containers, tied to this process).
A state over `max_bytes`, a token past its cap, or a copy that fails refuses the
fork with the reason (ForkUnavailable); the refusal is kept for the session, so
its later calls are not forked either.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from backends.errors import BackendError, BackendUnavailable, ForkUnavailable
from backends.shell.docker_shell import DockerShell
from backends.shell.fork_copy import ForkCopyError, ForkedState, copy_files, measure, read_shell, restore_script
from backends.shell.sandboxes import Sandboxes
from backends.shell.screen import ShellResult

log = logging.getLogger("simroute.shell")


@dataclass(slots=True)
class ShellFork:
    id: str
    shell: DockerShell
    state: ForkedState
    source: str  # "session sandbox" or "initial workspace"
    started_s: float = 0.0  # how long making it took
    created: float = field(default_factory=time.time)
    calls: int = 0  # the forked calls run here so far: the first is where the session diverged

    def describe(self) -> dict[str, Any]:
        """What an answer from this fork carries under its source's `fork` key."""
        return {
            "id": self.id,
            "call": self.calls,
            "container": getattr(self.shell.container, "name", None),
            "from": self.source,
            "copied": self.state.summary(),
            "fork_s": round(self.started_s, 3),
        }


class ShellForks:
    def __init__(
        self,
        sandboxes: Sandboxes,
        *,
        max_bytes: int,
        max_per_group: int,
        copy_timeout_s: float,
        group_of: Callable[[str], str] = lambda session_id: "",
    ) -> None:
        self.sandboxes = sandboxes
        self.max_bytes, self.max_per_group, self.copy_timeout_s = max_bytes, max_per_group, copy_timeout_s
        self.group_of = group_of  # the token a session belongs to: forks are capped per token
        self._forks: dict[str, ShellFork] = {}
        self._refused: dict[str, str] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.made = 0  # forks made since start (for /metrics)
        self.refusals = 0

    @property
    def open(self) -> int:
        return len(self._forks)

    def fork_of(self, session_id: str) -> ShellFork | None:
        return self._forks.get(session_id)

    async def exec(self, session_id: str, command: str, *, timeout_s: float) -> tuple[ShellResult, ShellFork]:
        """Run `command` on the session's fork (made now if it has none). Raises ForkUnavailable."""
        result, fork, _ = await self.run(session_id, command, timeout_s=timeout_s)
        return result, fork

    async def run(
        self, session_id: str, command: str, *, timeout_s: float
    ) -> tuple[ShellResult, ShellFork, dict[str, Any]]:
        """`exec`, with the fork described as of this call (its number taken before the
        command runs, so concurrent calls of a session each keep their own)."""
        fork = await self._fork_for(session_id)
        fork.calls += 1
        described = fork.describe()
        return await fork.shell.exec(command, timeout_s=timeout_s), fork, described

    async def _fork_for(self, session_id: str) -> ShellFork:
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            if (fork := self._forks.get(session_id)) is not None:
                return fork
            if (why := self._refused.get(session_id)) is not None:
                raise ForkUnavailable(f"{why} (refused at this session's first fork)")
            try:
                fork = await self._make(session_id)
            except ForkUnavailable as exc:
                self._refused[session_id], self.refusals = str(exc), self.refusals + 1
                raise
            self._forks[session_id], self.made = fork, self.made + 1
            return fork

    async def _make(self, session_id: str) -> ShellFork:
        group = self.group_of(session_id)
        if sum(1 for other in self._forks if self.group_of(other) == group) >= self.max_per_group:
            raise ForkUnavailable(f"this token already has {self.max_per_group} forks open (fork.max_per_token)")
        started = time.monotonic()
        real = self.sandboxes.real_shell(session_id)
        state = ForkedState()
        try:
            if real is not None:
                # Measured and the shell read at once (two execs of the engine's, each a round trip).
                state.sizes, _ = await asyncio.wait_for(
                    asyncio.gather(
                        asyncio.to_thread(measure, real),
                        read_shell(real, state, timeout_s=min(10.0, self.copy_timeout_s)),
                    ),
                    self.copy_timeout_s,
                )
                total = sum(state.sizes.values())
                if total > self.max_bytes:
                    raise ForkUnavailable(
                        f"the sandbox holds {total} bytes, more than fork.max_bytes ({self.max_bytes})"
                    )
            shell = await self.sandboxes.spare(prepared=real is None, network=False)
        except (ForkCopyError, TimeoutError, BackendUnavailable, BackendError) as exc:
            raise ForkUnavailable(f"the sandbox could not be forked: {self._why(exc)}") from exc
        try:
            if real is not None:
                # The archive holds headers and padding too (much more than the files for many tiny
                # ones): bounded by twice max_bytes, and the fork's own tmpfs sizes bound what it takes.
                limit = 2 * self.max_bytes + (16 << 20)
                state.archive_bytes = await asyncio.to_thread(
                    copy_files, real, shell, limit=limit, timeout_s=self.copy_timeout_s
                )
                restored = await shell.exec(restore_script(state), timeout_s=10.0)
                if restored.exit_code != 0:
                    raise ForkCopyError(
                        f"restoring the working directory and variables failed: {restored.output[-200:]}"
                    )
        except BaseException as exc:
            await asyncio.shield(shell.aclose())
            if isinstance(exc, (ForkCopyError, TimeoutError, BackendError)):
                raise ForkUnavailable(f"the sandbox could not be forked: {self._why(exc)}") from exc
            raise
        fork = ShellFork(
            uuid.uuid4().hex[:12], shell, state, "session sandbox" if real is not None else "initial workspace"
        )
        fork.started_s = time.monotonic() - started
        log.info(
            "session %s forked its shell into %s (%s, %.0f ms)",
            session_id[:8],
            fork.describe()["container"],
            fork.source,
            1000 * fork.started_s,
        )
        return fork

    def _why(self, exc: BaseException) -> str:
        return str(exc) or f"copying took longer than fork.copy_timeout_s ({self.copy_timeout_s:g}s)"

    async def close_session(self, session_id: str) -> None:
        """Remove the session's fork (waiting for one being made)."""
        lock = self._locks.get(session_id)
        if lock is None:
            return
        async with lock:
            fork = self._forks.pop(session_id, None)
            self._refused.pop(session_id, None)
            self._locks.pop(session_id, None)
        if fork is not None:
            await fork.shell.aclose()

    async def aclose(self) -> None:
        forks = list(self._forks.values())
        self._forks.clear()
        outcomes = await asyncio.gather(*(fork.shell.aclose() for fork in forks), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, Exception):  # each removal goes on whatever the others do
                log.warning("shell: removing a fork at shutdown: %s", outcome)
