"""Shadowing: the simulated side of a call runs off the agent's path.

The record is written as `pending` before the agent sees the real result, so
shadow work interrupted by a stop is never lost: the next start (or
`simroute drain`) rebuilds the session's history from the records and
completes it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from router.types import Call, Session, Simulator, Turn
from shadow.divergence import divergence
from shadow.records import Record
from shadow.sqlite_store import SQLiteStore, StoreError

log = logging.getLogger("simroute.shadow")


def shadow_session_id(record: Record) -> str:
    # Its own engine session: shadow work never holds the model context (and the
    # cached prefix) of the agent's own simulated calls.
    return f"{record.call.session_id}#shadow"


class ShadowRunner:
    def __init__(self, *, simulator: Simulator, store: SQLiteStore, deadline_for: Callable[[Call], float]) -> None:
        self.simulator = simulator
        self.store = store
        self.deadline_for = deadline_for
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    def submit(self, record: Record, history: list[Turn]) -> None:
        """Simulate `record`'s call given the history before it; update the record when done."""
        session = Session(id=shadow_session_id(record), history=list(history))
        task = asyncio.get_running_loop().create_task(self.complete(record, session), name=f"shadow-{record.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def complete(self, record: Record, session: Session) -> None:
        simulated = await self.simulator.simulate(record.call, session, deadline_s=self.deadline_for(record.call), background=True)
        record.shadow = simulated
        record.divergence = divergence(record.served, simulated)
        record.status = "complete"
        try:
            self.store.update(record)
        except StoreError as exc:  # stays pending in the store: the next drain retries it
            log.error("shadow result of %s not stored: %s", record.id, exc)

    async def drain(self) -> int:
        """Complete every pending record in the store; returns how many."""
        pending = self.store.pending()
        for record in pending:
            history = [Turn(r.call, r.served) for r in self.store.session_records(record.call.session_id, before_step=record.step)]
            await self.complete(record, Session(id=shadow_session_id(record), history=history))
        return len(pending)

    async def wait(self, timeout_s: float) -> None:
        """Give in-flight shadow work `timeout_s` to finish; what does not stays pending."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout_s)

    async def aclose(self, grace_s: float = 2.0) -> None:
        await self.wait(grace_s)
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
