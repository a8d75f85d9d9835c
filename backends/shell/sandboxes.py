"""`Sandboxes`: the real side of the shell channel, one `DockerShell` per agent session.

A warm pool of started sandboxes (container + bootstrapped shell) makes a new
session's first command as fast as its second. Sandboxes are removed when their
session closes (explicitly or on idle TTL) and when the router stops; ones left
by a killed router are reaped when the next one starts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from pathlib import Path
from typing import Any

from backends.errors import BackendUnavailable
from backends.shell.container import reap_orphans, this_process_owner
from backends.shell.docker_shell import DockerShell
from backends.shell.screen import ShellResult
from router.config import ShellConfig

log = logging.getLogger("simroute.shell")

_RETRY_ENGINE_AFTER_S = 10.0


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
        self._opening: dict[str, asyncio.Task[DockerShell]] = {}
        self._ready: list[DockerShell] = []
        self._wanted = asyncio.Event()
        self._filler: asyncio.Task[None] | None = None

    # --- lifecycle ----------------------------------------------------------------

    async def start(self) -> Sandboxes:
        """Connect to the engine, reap orphans, start filling the pool. Without an
        engine the router still starts: the real route reports why, sim works."""
        if await self._connect():
            reaped = await asyncio.to_thread(reap_orphans, self.client)
            if reaped:
                log.info("removed %d sandboxes left by a stopped router: %s", len(reaped), ", ".join(reaped))
            if self.warm_pool and self.config.pool_size > 0:
                self._filler = asyncio.get_running_loop().create_task(self._fill_forever(), name="simroute-shell-pool")
        return self

    async def _connect(self) -> bool:
        if self.client is not None and self._unavailable is None:
            return True
        self._checked_at = time.monotonic()
        try:
            self.client = await asyncio.to_thread(_docker_client)
            await asyncio.to_thread(self.client.images.get, self.config.image)
        except BackendUnavailable as exc:
            self._unavailable = str(exc)
            log.warning("shell: %s", exc)
            return False
        except Exception as exc:
            if type(exc).__name__ == "ImageNotFound":
                self._unavailable = (
                    f"the sandbox image {self.config.image!r} is not built on this Docker engine: "
                    "run scripts/build-images.sh (or set shell.image)"
                )
            else:
                self._unavailable = f"the Docker engine failed: {exc}"
            log.warning("shell: %s", self._unavailable)
            return False
        self._unavailable = None
        return True

    async def aclose(self) -> None:
        if self._filler is not None:
            self._filler.cancel()
            await asyncio.gather(self._filler, return_exceptions=True)
            self._filler = None
        for task in list(self._opening.values()):
            task.cancel()
        await asyncio.gather(*self._opening.values(), return_exceptions=True)
        shells = list(self._sessions.values()) + self._ready
        self._sessions.clear()
        self._ready.clear()
        await asyncio.gather(*(shell.aclose() for shell in shells), return_exceptions=True)

    # --- sessions -----------------------------------------------------------------

    async def exec(self, session_id: str, command: str, *, timeout_s: float) -> ShellResult:
        shell = await self.shell_for(session_id)
        return await shell.exec(command, timeout_s=timeout_s)

    async def shell_for(self, session_id: str) -> DockerShell:
        shell = self._sessions.get(session_id)
        if shell is not None:
            return shell
        opening = self._opening.get(session_id)
        if opening is None:
            opening = self._opening[session_id] = asyncio.get_running_loop().create_task(self._open(session_id), name=f"simroute-shell-open-{session_id}")
        try:
            shell = await asyncio.shield(opening)
        finally:
            if opening.done():
                self._opening.pop(session_id, None)
        return shell

    async def _open(self, session_id: str) -> DockerShell:
        if self._unavailable is not None and time.monotonic() - self._checked_at > _RETRY_ENGINE_AFTER_S:
            await self._connect()
        if self._unavailable is not None or self.client is None:
            raise BackendUnavailable(f"the shell's real route needs a Docker sandbox: {self._unavailable}")
        shell = self._ready.pop(0) if self._ready else None
        self._wanted.set()
        if shell is None:
            shell = await DockerShell(self.client, self.config, owner=self._owner).start()
        shell.on_replaced = self._prepare
        await self._prepare(shell)
        self._sessions[session_id] = shell
        return shell

    async def _prepare(self, shell: DockerShell) -> None:
        if self.workspace is not None:
            await shell.copy_workspace(self.workspace)

    async def close_session(self, session_id: str) -> None:
        shell = self._sessions.pop(session_id, None)
        if shell is not None:
            await shell.aclose()

    @property
    def ready(self) -> int:
        return len(self._ready)

    # --- the warm pool ----------------------------------------------------------------

    async def _fill_forever(self) -> None:
        while True:
            while len(self._ready) < self.config.pool_size:
                try:
                    self._ready.append(await DockerShell(self.client, self.config, owner=self._owner).start())
                except Exception as exc:  # logged; sessions then start cold
                    log.warning("shell pool: could not start a sandbox: %s", exc)
                    await asyncio.sleep(5)
            self._wanted.clear()
            await self._wanted.wait()

    async def wait_ready(self, timeout_s: float = 60.0) -> None:
        """Until the pool is full (for tests and benchmarks)."""
        deadline = time.monotonic() + timeout_s
        while len(self._ready) < self.config.pool_size and time.monotonic() < deadline:
            await asyncio.sleep(0.05)


def _docker_client() -> Any:
    try:
        import docker
        from docker.errors import DockerException
    except ImportError as exc:  # pragma: no cover - a dependency of simroute
        raise BackendUnavailable("the docker Python package is missing: reinstall simroute") from exc
    address = os.environ.get("DOCKER_HOST") or "the default socket (unix:///var/run/docker.sock or the CLI context)"
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except DockerException as exc:
        raise BackendUnavailable(
            f"no Docker engine answers at {address} ({exc}); install and start Docker, set DOCKER_HOST, or route shell calls to sim"
        ) from exc
    return client
