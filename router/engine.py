"""The engine: a `Call` goes through the policies, the decision runs against
the backends, and the record is written before the agent sees the result."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio

from backends.replay import CallKeys, ReplayBackend
from policies.base import Policy, decide
from router.types import Call, CallNext, Decision, Observation, Provenance, Route, Session, Simulator, Turn
from shadow.records import Record
from shadow.runner import ShadowRunner
from shadow.spool import SpoolingWriter

log = logging.getLogger("simroute.engine")

_FALLBACK = Decision(Route.REAL, "default", "no policy answered")


@dataclass(slots=True)
class Outcome:
    observation: Observation
    record: Record


@dataclass(slots=True)
class Pending:
    """A decided call waiting for its observation."""

    call: Call
    session: Session
    decision: Decision
    occurrence: int
    keys: CallKeys
    route_note: str = ""
    needs_real: bool = False


class Engine:
    def __init__(
        self,
        *,
        policies: Sequence[Policy],
        records: SpoolingWriter,
        replay: ReplayBackend,
        replay_on_miss: str = "real",
        simulator: Simulator | None = None,
        shadow: ShadowRunner | None = None,
        shadow_rate: float = 0.0,
        deadline_for: Callable[[Call], float] = lambda call: 60.0,
        sim_deadline_for: Callable[[Call], float] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if replay_on_miss not in ("real", "sim", "error"):
            raise ValueError(f"replay_on_miss must be real, sim or error, got {replay_on_miss!r}")
        self.policies = list(policies)
        self.records = records
        self.replay = replay
        self.replay_on_miss = replay_on_miss
        self.simulator = simulator
        self.shadow = shadow
        self.shadow_rate = shadow_rate
        self.deadline_for = deadline_for
        self.sim_deadline_for = sim_deadline_for or deadline_for
        self.rng = rng or random.Random()

    def exact_key(self, call: Call) -> str:
        """The stored key of a call: its canonical form (per channel), nothing ignored."""
        return self.replay.exact_key(call)

    async def handle(self, call: Call, session: Session, real: CallNext, *, note: str = "") -> Outcome:
        """Decide, execute, record. `note` is added to the record (the front door's
        remarks, e.g. a changed tool schema)."""
        pending = self.begin(call, session)
        try:
            observation = await self.serve(pending)
            if observation is None:
                observation = await self._real(call, real)
        except asyncio.CancelledError:
            # The agent cancelled (or hung up): the call is still recorded, as cancelled.
            self.cancel(pending)
            raise
        return self.complete(pending, observation, note=note)

    # The steps of `handle`, for front doors whose real side does not fit one awaited
    # call (the HTTP proxy forwards the request itself and sees the answer in a later hook).

    def begin(self, call: Call, session: Session) -> Pending:
        """Count the call's occurrence and decide its route (pure policies, no I/O)."""
        keys = self.replay.keys(call)
        occurrence = session.occurrences[keys.replay] = session.occurrences.get(keys.replay, 0) + 1
        decision = decide(self.policies, call, session, fallback=_FALLBACK)
        return Pending(call, session, decision, occurrence, keys)

    async def serve(self, pending: Pending) -> Observation | None:
        """The observation of a route that needs no real side (sim, replay, deny), or
        None when the real side must answer; `pending.needs_real` then says so too."""
        observation, pending.route_note = await self._execute(pending)
        pending.needs_real = observation is None
        return observation

    def complete(self, pending: Pending, observation: Observation, *, note: str = "") -> Outcome:
        """Record what the agent gets (shadow work submitted when the route asks for it)."""
        call, session, decision = pending.call, pending.session, pending.decision
        route_note = pending.route_note
        shadowed = self._shadows(decision, observation)
        if shadowed and decision.route is Route.REAL:
            route_note = f"sampled for shadow (shadow.rate {self.shadow_rate:g})"
        history = list(session.history) if shadowed else []
        outcome = self._finish(
            call, session, decision, observation, "; ".join(n for n in (route_note, note) if n), pending.keys.exact, pending=shadowed
        )
        if shadowed:
            assert self.shadow is not None
            self.shadow.submit(outcome.record, history)
        return outcome

    def cancel(self, pending: Pending, reason: str = "cancelled by the agent before an answer") -> Outcome:
        """Record a call that ended without an answer."""
        return self._finish(pending.call, pending.session, pending.decision, Observation.error(reason), "cancelled", pending.keys.exact)

    def _shadows(self, decision: Decision, observation: Observation) -> bool:
        """Whether the simulated side runs off-path for this call: always for the shadow
        route, for a `shadow_rate` sample of real calls; only when real answered."""
        if self.shadow is None or observation.provenance is not Provenance.REAL:
            return False
        if decision.route is Route.SHADOW:
            return True
        return decision.route is Route.REAL and self.shadow_rate > 0 and self.rng.random() < self.shadow_rate

    def reject(self, call: Call, session: Session, *, policy: str, reason: str) -> Outcome:
        """Record a call refused before routing (e.g. arguments failing the tool's schema)."""
        decision = Decision(Route.DENY, policy, reason)
        return self._finish(call, session, decision, Observation.error(reason), "", self.exact_key(call))

    def _finish(
        self, call: Call, session: Session, decision: Decision, observation: Observation, note: str, exact_key: str, *, pending: bool = False
    ) -> Outcome:
        record = Record(
            call=call, decision=decision, served=observation, step=session.step, call_key=exact_key, note=note,
            status="pending" if pending else "complete",
        )
        self.records.write(record)  # durable (or spooled) before the agent sees the result
        session.history.append(Turn(call, observation))
        session.touch()
        return Outcome(observation, record)

    async def _execute(self, pending: Pending) -> tuple[Observation | None, str]:
        """(observation, note) of the decided route; observation None: the real side answers."""
        decision, call, session, occurrence = pending.decision, pending.call, pending.session, pending.occurrence
        route = decision.route
        if route is Route.REAL:
            return None, ""
        if route is Route.SHADOW:
            return None, "" if self.shadow is not None else "shadow: no world model configured, served real only"
        if route is Route.SIM:
            return await self._sim(call, session), ""
        if route is Route.DENY:
            return Observation.error(f"simroute denied this call ({decision.policy}): {decision.reason}"), ""
        assert route is Route.REPLAY
        hit = self.replay.lookup(call, occurrence=occurrence, key=pending.keys.replay)
        if hit is not None:
            observation, source_id = hit
            return observation, f"replayed record {source_id} (occurrence {occurrence})"
        miss = f"replay miss (occurrence {occurrence} of this call has no recorded real observation)"
        if self.replay_on_miss == "real":
            return None, f"{miss}; served real"
        if self.replay_on_miss == "sim":
            return await self._sim(call, session), f"{miss}; served sim"
        return Observation.error(f"simroute: {miss} and replay.on_miss is 'error'"), miss

    async def _real(self, call: Call, real: CallNext) -> Observation:
        deadline = self.deadline_for(call)
        started = time.perf_counter()
        try:
            with anyio.fail_after(deadline):
                observation = await real(call)
        except TimeoutError:
            return Observation.error(
                f"simroute: upstream {call.server!r} did not answer {call.tool!r} within its {deadline:g}s deadline",
                Provenance.REAL,
                time.perf_counter() - started,
            )
        return observation

    async def _sim(self, call: Call, session: Session) -> Observation:
        if self.simulator is None:
            return Observation.error(
                "simroute: the sim route needs a world model, and none is configured (see the world_model section)",
                Provenance.SIM,
            )
        return await self.simulator.simulate(call, session, deadline_s=self.sim_deadline_for(call))
