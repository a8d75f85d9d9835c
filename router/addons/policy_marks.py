"""What policies learn from a finished call, kept in the session's state and shared
with every replica: each policy's `after_call(session, call, decision)` updates the
session (rehearsal: a call diverted to sim pins its server to sim and marks it
diverted; the learned router: a real call with possible side effects marks the
recordings it may have changed as stale), and this addon shares what changed.

What changed is shared in one transaction: a sim pin is never seen without its
diversion mark (without it, a later read would go real on another replica).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from calls import Call, Decision, Session
from records.record import Record
from records.store.protocol import StoreError
from router.engine.addons import CallAddon
from router.engine.pending import Pending

if TYPE_CHECKING:
    from router.engine.parts import EngineParts

log = logging.getLogger("simroute.engine")

AfterCall = Callable[[Session, Call, Decision], None]


class PolicyMarks(CallAddon):
    def __init__(self, after_calls: Sequence[AfterCall]) -> None:
        self.after_calls = list(after_calls)
        self.engine: EngineParts | None = None

    def load(self, engine: EngineParts) -> None:
        self.engine = engine

    async def finished(self, pending: Pending, record: Record) -> None:
        session, call, decision = pending.session, pending.call, pending.decision
        for after_call in self.after_calls:
            after_call(session, call, decision)
        if self.engine is None:
            return
        try:
            await self.engine.session_state.save(session)  # only what changed is sent
        except StoreError as exc:  # kept on this replica; shared with its next save
            log.warning("routing marks of session %s not shared: %s", session.id[:8], exc)
