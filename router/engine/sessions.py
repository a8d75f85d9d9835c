"""Agent sessions: opened on first call (or explicitly, as an episode), closed on idle
timeout or explicitly.

Each session owns per-agent state (history, replay counters) and, through the
`on_close` hook, the upstream sessions, sandboxes and browser contexts opened on its
behalf. One reaper serves every kind of session: a session may carry its own idle
TTL (an episode's), else the registry's.

A session opened explicitly (`open`, an episode) is never opened again implicitly:
once it has closed, a late call naming it is refused (`SessionEndedError`) rather
than served by a fresh session routed by the server's default policy.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from calls import Session
from router.auth import short_id

log = logging.getLogger("simroute.sessions")

# Longer than any call's deadline: a session counted busy this long past its TTL is idle.
BUSY_CEILING_S = 3600.0
# Ended explicit sessions remembered (their ids are random: a bounded memory suffices).
_ENDED_REMEMBERED = 65536


class SessionRefusedError(RuntimeError):
    """A call's session cannot be had: the reason is the message."""


class SessionLimitError(SessionRefusedError):
    """Too many agent sessions are open."""


class SessionEndedError(SessionRefusedError):
    """A call names an explicitly opened session (an episode) that has closed."""


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
        # Told (session id, why) after a session closed: "closed", "reaped" or "stopped" (the router stopped).
        self.closed_listeners: list[Callable[[str, str], Awaitable[None]]] = []
        self._sessions: dict[str, Session] = {}
        self._explicit: set[str] = set()
        self._ended: OrderedDict[str, str] = OrderedDict()  # explicit session id -> why it ended
        self._reaper: asyncio.Task[None] | None = None
        self._sleeping_for = 0.0  # the reaper's current wait
        self._wake = asyncio.Event()  # a session with a shorter TTL opened: the reaper's wait is too long

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: str) -> bool:
        return session_id in self._sessions

    def get(self, session_id: str) -> Session:
        """The open session with this id, opened now if new (unless it was opened
        explicitly and has ended)."""
        session = self._sessions.get(session_id)
        if session is None:
            ended = self._ended.get(session_id)
            if ended is not None:
                raise SessionEndedError(
                    f"simroute: episode session {short_id(session_id)} has ended ({ended}); start a new episode"
                )
            session = self._add(Session(id=session_id))
        session.touch()
        return session

    def find(self, session_id: str) -> Session | None:
        """The open session with this id, or None (nothing is opened)."""
        return self._sessions.get(session_id)

    def open(self, session: Session) -> Session:
        """Open `session` explicitly (an episode): it counts against `max_open` like any,
        and once closed it is not reopened by a late call."""
        if session.id in self._sessions or session.id in self._ended:
            raise ValueError(f"session {short_id(session.id)} exists already")
        self._add(session)
        self._explicit.add(session.id)
        if session.idle_ttl_s is not None and session.idle_ttl_s / 4 < self._sleeping_for:
            self._wake.set()
        return session

    def _add(self, session: Session) -> Session:
        if len(self._sessions) >= self.max_open:
            raise SessionLimitError(
                f"simroute has {self.max_open} agent sessions open (sessions.max_open); close one or raise the limit"
            )
        self._sessions[session.id] = session
        log.info("agent session %s opened", short_id(session.id))
        return session

    def ended(self, session_id: str) -> str | None:
        """Why an explicitly opened session ended ("closed", "reaped"), or None."""
        return self._ended.get(session_id)

    async def close(self, session_id: str, reason: str = "closed") -> None:
        if (session := self._sessions.pop(session_id, None)) is not None:
            session.closed = True
            log.info("agent session %s %s", short_id(session_id), reason)
        if session_id in self._explicit:
            self._explicit.discard(session_id)
            self._ended[session_id] = reason
            while len(self._ended) > _ENDED_REMEMBERED:
                self._ended.popitem(last=False)
        if self.on_close is not None:
            await self.on_close(session_id)
        for listener in self.closed_listeners:
            await listener(session_id, reason)

    async def close_idle(self) -> list[str]:
        now = time.monotonic()
        idle = [sid for sid, s in self._sessions.items() if self._idle(s, now)]
        for session_id in idle:
            await self.close(session_id, "reaped")
        return idle

    def _idle(self, session: Session, now: float) -> bool:
        """Unused for its TTL, and no call in flight (a count a lost call could leave
        behind stops counting after BUSY_CEILING_S)."""
        quiet_for = now - session.last_seen
        ttl = session.idle_ttl_s or self.idle_ttl_s
        return quiet_for > ttl and (session.in_flight <= 0 or quiet_for > ttl + BUSY_CEILING_S)

    def start(self) -> None:
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_forever(), name="simroute-session-reaper")

    def _reap_interval(self) -> float:
        """A quarter of the shortest idle TTL open (at most 30 s): a session is reaped
        at most a quarter TTL late."""
        shortest = min((s.idle_ttl_s for s in self._sessions.values() if s.idle_ttl_s), default=self.idle_ttl_s)
        return max(0.05, min(min(shortest, self.idle_ttl_s) / 4, 30.0))

    async def _reap_forever(self) -> None:
        while True:
            self._sleeping_for = self._reap_interval()
            try:
                await asyncio.wait_for(self._wake.wait(), self._sleeping_for)
                self._wake.clear()
                continue  # woken: wait again, for the shorter interval
            except TimeoutError:
                pass
            try:
                await self.close_idle()
            except Exception:  # the reaper's boundary: one failed close must not stop reaping
                log.exception("closing idle sessions failed")

    async def aclose(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            try:
                await self._reaper
            except asyncio.CancelledError:
                pass
            self._reaper = None
        for session_id in list(self._sessions):
            await self.close(session_id, "stopped")  # the router stops: with shared state, another replica may go on
