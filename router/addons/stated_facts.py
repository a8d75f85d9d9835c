"""Keeps the facts a session's answers state (backends/world_model/facts.py) in the
session's state, shared by replicas, so the world model is told them back when the
turns that stated them no longer fit its context.

A call addon (router/engine/addons.py): told each finished call's record, it keeps what
the answer the agent got states, as stored (secrets redacted). A perturbed answer or
simroute's own (a denial, a deadline) states nothing about the world.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from backends.world_model.facts import StatedFacts, keep_facts, stated_facts
from calls import Provenance
from records.record import Record
from records.shared_state.session_state import SessionState
from records.store.protocol import StoreError
from router.engine.addons import CallAddon
from router.engine.pending import Pending

if TYPE_CHECKING:
    from router.engine.parts import EngineParts

log = logging.getLogger("simroute.facts")


class FactKeeper(CallAddon):
    def __init__(self, session_state: SessionState | None = None, *, limit: int, every_session: bool = True) -> None:
        self.session_state = session_state  # None: the engine's
        self.limit = limit  # facts kept per session (0: none)
        # False when the config routes nothing to the world model: only episodes (whose
        # own route may be sim) keep facts, a real-only router does no work for them.
        self.every_session = every_session
        self.engine: EngineParts | None = None

    def load(self, engine: EngineParts) -> None:
        self.engine = engine

    async def finished(self, pending: Pending, record: Record) -> None:
        served, session = record.served, pending.session
        if not self.limit or not (self.every_session or session.is_episode):
            return
        if record.perturbation is not None or served.provenance is Provenance.NONE or record.status == "started":
            return
        kept = session.slice(StatedFacts)
        kept.limit = self.limit
        changed = keep_facts(kept.facts, stated_facts(record.call, served), step=record.step, limit=self.limit)
        if not changed:
            return
        state = self.session_state or (self.engine.session_state if self.engine is not None else None)
        if state is None:
            return
        try:
            await state.save(session, StatedFacts)
        except StoreError as exc:  # kept on this replica; another one will not be told them
            log.warning("stated facts of session %s not shared: %s", session.id[:8], exc)
