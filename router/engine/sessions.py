"""Agent sessions: opened on first call, closed on idle timeout or explicitly.

Each session owns per-agent state (history, replay counters) and, through the
`on_close` hook, the upstream sessions opened on its behalf.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from router.auth import short_id
from router.types import Session

log = logging.getLogger("simroute.sessions")


class SessionLimitError(RuntimeError):
    """Too many agent sessions are open."""


class SessionRegistry:
    def __init__(
        self,
        *,
        idle_ttl_s: float,
        max_open: int,
        on_close: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self.idle_ttl_s = idle_ttl_s
        self.max_open = max_open
        self.on_close = on_close
        self._sessions: dict[str, Session] = {}
        self._reaper: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: str) -> Session:
        """The open session with this id, opened now if new."""
        session = self._sessions.get(session_id)
        if session is None:
            if len(self._sessions) >= self.max_open:
                raise SessionLimitError(
                    f"simroute has {self.max_open} agent sessions open (sessions.max_open); close one or raise the limit"
                )
            session = self._sessions[session_id] = Session(id=session_id)
            log.info("agent session %s opened", short_id(session_id))
        session.touch()
        return session

    async def close(self, session_id: str) -> None:
        if self._sessions.pop(session_id, None) is not None:
            log.info("agent session %s closed", short_id(session_id))
        if self.on_close is not None:
            await self.on_close(session_id)

    async def close_idle(self) -> list[str]:
        cutoff = time.monotonic() - self.idle_ttl_s
        idle = [sid for sid, s in self._sessions.items() if s.last_seen < cutoff]
        for session_id in idle:
            await self.close(session_id)
        return idle

    def start(self) -> None:
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_forever(), name="simroute-session-reaper")

    async def _reap_forever(self) -> None:
        interval = max(0.05, min(self.idle_ttl_s / 4, 30.0))
        while True:
            await asyncio.sleep(interval)
            await self.close_idle()

    async def aclose(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            try:
                await self._reaper
            except asyncio.CancelledError:
                pass
            self._reaper = None
        for session_id in list(self._sessions):
            await self.close(session_id)
