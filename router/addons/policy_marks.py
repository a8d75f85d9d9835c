"""What policies learn from a finished call, kept in the session's state and shared
with every replica: each policy's `after_call(session, call, decision)` updates the
session (rehearsal: a call diverted to sim pins its server to sim and marks it
diverted; the learned router: a real call with possible side effects marks the
recordings it may have changed as stale), and this addon shares what changed.

The diversion marks are shared before the pin: a sim pin without its mark would let
a later read go real on another replica.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from router.engine.addons import CallAddon
from router.engine.pending import Pending
from router.types import Call, Decision, Session
from shadow.records import Record
from shadow.store.protocol import StoreError

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
        pins, marks, diverted = dict(session.pinned), set(session.side_effects), set(session.diverted)
        for after_call in self.after_calls:
            after_call(session, call, decision)
        if self.engine is None:
            return
        state, what = self.engine.session_state, ""
        try:
            if len(session.diverted) != len(diverted):
                what = "rehearsal diversions"
                await state.save_diverted(session, session.diverted - diverted)
            if session.pinned != pins:
                what = "pins"
                await state.save_pins(session)
            if len(session.side_effects) != len(marks):  # marks only grow
                what = "side-effect marks"
                await state.save_side_effects(session, session.side_effects - marks)
        except StoreError as exc:
            log.warning("%s of session %s not shared: %s", what, session.id[:8], exc)
