"""The engine: a `Call` goes through the policies, the decision runs against
the backends, and the record is written before the agent sees the result.

Every call leaves a record, whatever ended it: an answer, a denial, a deadline,
a backend that raised, a client that hung up. A call sent to the real side that
is not known to be read-only is written ahead (`started`) before it runs, so a
crash after a real side effect still leaves a trace.

Errors. The engine is the boundary where anything that goes wrong below it becomes
an observation the agent sees and a record, never an exception in a front door:
- a policy that raises denies the call (`policy engine`): nothing goes real undecided;
- a backend (replay, the simulator, the real side a front door passes in) that raises
  answers with an error observation naming the route and the exception;
- a deadline answers with an error observation of provenance `none`;
- `RecordError` (the record writer could not write, nor spool): before a real call,
  the call does not run; after it, the answer is withheld;
- `StoreError` from shared session state: the replica counts the session alone.
The upstream guard (upstream_guard.py) may refuse a real call before it is sent:
simroute's own answer (provenance `none`), recorded with the reason.
Those four broad handlers are the documented boundaries (`# noqa: BLE001`).
Cancellation is recorded (`cancelled`) and re-raised.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence

import anyio

from backends.replay import ReplayBackend
from policies import learned, rehearsal
from policies.base import Policy, decide
from policies.virtual import VirtualServers
from router.engine.call_spans import CallTracer, as_current
from router.engine.guard_shapes import refusal_observation
from router.engine.guard_state import Outcome as GuardOutcome
from router.engine.pending import Outcome, Pending
from router.engine.perturbing import Perturber
from router.engine.real_calls import admit_real, call_real, release_real
from router.engine.replay_modes import ReplayModes, replay_route
from router.engine.session_state import LocalSessionState, SessionState, claim_locally
from router.engine.upstream_guard import Refused, UpstreamGuard, outcome_of
from router.engine.watchers import CallWatcher, RecordWriter
from router.types import Call, CallNext, Decision, Observation, Provenance, Route, Session, Simulator, Steer, Turn
from shadow.owners import this_process_owner
from shadow.records import Record
from shadow.redaction import Redactor, typed_into
from shadow.runner import ShadowQueue
from shadow.store.protocol import RecordError, StoreError
from shadow.store.record_log import RecordLog

log = logging.getLogger("simroute.engine")

_FALLBACK = Decision(Route.REAL, "default", "no policy answered")
# MCP requests that are routed calls but not tool calls: the world model does not
# simulate them yet, so their sim route answers an error naming them.
_NOT_SIMULATED = frozenset({("mcp", "resources/read"), ("mcp", "prompts/get")})
_STARTED = "the call was sent to the real side; its answer has not been recorded yet"


class Engine:
    def __init__(
        self,
        *,
        policies: Sequence[Policy],
        records: RecordLog,
        replay: ReplayBackend,
        replay_modes: ReplayModes | None = None,
        simulator: Simulator | None = None,
        shadow: ShadowQueue | None = None,
        shadow_rate: float = 0.0,
        deadline_for: Callable[[Call], float] = lambda call: 60.0,
        sim_deadline_for: Callable[[Call], float] | None = None,
        rng: random.Random | None = None,
        session_state: SessionState | None = None,
        redactor: Redactor | None = None,
        watchers: Sequence[CallWatcher] = (),
        perturber: Perturber | None = None,
        virtual: VirtualServers | None = None,
        guard: UpstreamGuard | None = None,
        tracer: CallTracer | None = None,
    ) -> None:
        self.policies = list(policies)
        self.records = records
        self.replay = replay
        self.replay_modes = replay_modes or ReplayModes()
        self.simulator = simulator
        self.shadow = shadow
        self.shadow_rate = shadow_rate
        self.deadline_for = deadline_for
        self.sim_deadline_for = sim_deadline_for or deadline_for
        self.rng = rng or random.Random()
        self.session_state = session_state or LocalSessionState()
        # Secrets never reach a record, a spool line, the world model or a replay key.
        self.redactor = redactor
        # What watches each call's events (router/engine/watchers.py): the record writer
        # first (every call leaves a record), then e.g. the noise learner.
        self.watchers: list[CallWatcher] = [RecordWriter(records), *watchers]
        self.tracer = tracer  # a span per call (router/engine/call_spans.py); None: tracing off, no span
        self.watchers += [tracer] if tracer is not None else []
        # Seeded perturbation plans (router/engine/perturbing.py); none: no call is perturbed.
        self.perturber = perturber or Perturber()
        # Virtual MCP servers (policies/virtual.py): no decision sends their calls real.
        self.virtual = virtual or VirtualServers()
        # Protects the real side (router/engine/upstream_guard.py); none: every real call goes.
        self.guard = guard
        self.owner = this_process_owner()

    async def handle(self, call: Call, session: Session, real: CallNext, *, note: str = "", read_only: bool = False) -> Outcome:
        """Decide, execute, record. `note` is added to the record (the front door's
        remarks, e.g. a changed tool schema); `read_only`: the front door knows the
        call changes nothing (it then needs no write-ahead record)."""
        pending = await self.begin(call, session, read_only=read_only)
        try:
            observation = await self.serve(pending)
            if observation is None:
                observation = await self.run_real(pending, real)
        except asyncio.CancelledError:
            # The agent cancelled (or hung up): the call is still recorded, as cancelled.
            with anyio.CancelScope(shield=True):
                await self.cancel(pending)
            raise
        except RecordError as exc:  # the write-ahead record could not be written: fail closed
            observation = Observation.error(str(exc))
        outcome = await self.complete(pending, observation, note=note)
        self.probe(pending, outcome.record, lambda: real(pending.call))
        return outcome

    def probe(self, pending: Pending, record: Record, again: Callable[[], Awaitable[Observation]]) -> bool:
        """A finished call the front door can send again (`again`), offered to the
        watchers (the noise learner probes a sample of real calls known read-only off
        the agent's path). Every channel's probes are offered here. `again` runs under
        the call's deadline, and its answer is redacted like the record's."""
        redactor, session_id = self.redactor, pending.call.session_id
        deadline = pending.decision.deadline_s or self.deadline_for(pending.call)

        async def answer() -> Observation:
            with anyio.fail_after(deadline):
                observation = await again()
            return redactor.observation(observation, session_id=session_id) if redactor is not None else observation

        return any(watcher.repeatable(pending, record, answer) for watcher in self.watchers)

    # The steps of `handle`, for front doors whose real side does not fit one awaited
    # call (the HTTP proxy forwards the request itself and sees the answer in a later hook).

    async def begin(self, call: Call, session: Session, *, read_only: bool = False) -> Pending:
        """Claim the call's step and occurrence, and decide its route (pure policies, no
        I/O). A policy that raises denies the call: nothing goes real undecided."""
        stored_call = self._redacted(call, session)
        keys = self.replay.keys(stored_call)
        step, occurrence = await self._claim(session, keys.replay)
        pins = dict(session.pinned)
        try:
            decision = decide(session.policies or self.policies, call, session, fallback=_FALLBACK)
        except Exception as exc:
            log.exception("deciding %s.%s failed", call.server, call.tool)
            decision = Decision(Route.DENY, "engine", f"a routing policy failed: {type(exc).__name__}: {exc}")
        decision = self.virtual.route(call, decision)
        if session.pinned != pins:
            await self._save_pins(session)
        pending = Pending(call, session, decision, occurrence, keys, stored_call, step=step, read_only=read_only)
        if self.perturber.active or session.perturbation is not None:
            pending.perturbation = await self.perturber.decide(pending, self.session_state)
        pending.in_flight, session.in_flight = True, session.in_flight + 1  # a session busy with a call is not idle
        for watcher in self.watchers:
            watcher.decided(pending)
        return pending

    def _redacted(self, call: Call, session: Session) -> Call:
        if self.redactor is None:
            return call
        return self.redactor.call(call, target_name=typed_into(call, session))

    async def _claim(self, session: Session, replay_key: str) -> tuple[int, int]:
        try:
            return await self.session_state.begin(session, replay_key)
        except StoreError as exc:  # shared state unreachable: this replica counts alone until it returns
            log.warning("shared session state unavailable (%s); counting session %s locally", exc, session.id[:8])
            return claim_locally(session, replay_key)

    async def _save_pins(self, session: Session) -> None:
        try:
            await self.session_state.save_pins(session)
        except StoreError as exc:
            log.warning("session pins not shared: %s", exc)

    async def _save_side_effects(self, session: Session, marks: set[tuple[str, str, str]]) -> None:
        try:
            await self.session_state.save_side_effects(session, marks)
        except StoreError as exc:
            log.warning("side-effect marks of session %s not shared: %s", session.id[:8], exc)

    async def _save_diverted(self, session: Session, marks: set[tuple[str, str]]) -> None:
        try:
            await self.session_state.save_diverted(session, marks)
        except StoreError as exc:
            log.warning("rehearsal diversions of session %s not shared: %s", session.id[:8], exc)

    async def serve(self, pending: Pending) -> Observation | None:
        """The observation of a route that needs no real side (sim, replay, deny), or
        None when the real side must answer; `pending.needs_real` then says so too.
        A backend that raises answers with an error observation (recorded as any). A
        perturbation's delay comes first; its fault answers instead of any route."""
        try:
            observation = await self.perturber.before_route(pending) if pending.perturbation is not None else None
            if observation is None:
                observation, pending.route_note = await self._execute(pending)
        except Exception as exc:
            log.exception("serving %s.%s by %s failed", pending.call.server, pending.call.tool, pending.decision.route)
            observation = Observation.error(f"simroute: the {pending.decision.route} route failed: {type(exc).__name__}: {exc}")
        pending.needs_real = observation is None
        return observation

    async def write_ahead(self, pending: Pending) -> None:
        """Before a real call with possible side effects: its record, `started`.
        Raises RecordError when it cannot be written (the call must not run)."""
        if pending.read_only or pending.written_ahead:
            return
        started = self._record(pending, Observation.error(_STARTED), pending.route_note, status="started")
        for watcher in self.watchers:  # the record writer first: a RecordError keeps the call from running
            await watcher.sending(pending, started)
        pending.written_ahead = True

    async def run_real(self, pending: Pending, real: CallNext) -> Observation:
        """The real side under the call's deadline, written ahead first, behind the
        upstream guard (a refused call is answered here and never sent)."""
        call = pending.call
        deadline = pending.decision.deadline_s or self.deadline_for(call)  # a rule's deadline_s wins
        ticket = await admit_real(self.guard, pending, deadline)
        if isinstance(ticket, Refused):
            return refusal_observation(call, ticket, pending.session.history)
        outcome = GuardOutcome.NEUTRAL  # cancelled or never sent: nothing learned about the real side
        try:
            await self.write_ahead(pending)
            with as_current(pending):  # what reaches the upstream continues the call's trace
                observation, raised = await call_real(call, real, deadline)
            outcome = outcome_of(call, observation, raised=raised, session_closed=pending.session.closed)
            return observation
        finally:
            if ticket is not None:
                await release_real(self.guard, ticket, outcome)

    async def complete(self, pending: Pending, observation: Observation, *, note: str = "") -> Outcome:
        """Record what the agent gets (shadow work submitted when the route asks for it).
        If the record cannot be written, the agent gets an error instead of an
        unrecorded answer."""
        session, decision, route_note = pending.session, pending.decision, pending.route_note
        if pending.perturbation is not None:  # an answer kind changed the answer; the record keeps the route's own
            sim, state = (self._sim if self.simulator else None), self.session_state  # a mislead's truth is redacted first
            observation, perturbed = await self.perturber.after_route(pending, observation, state=state, sim=sim, redactor=self.redactor)
            route_note = "; ".join(n for n in (route_note, perturbed) if n)
        shadowed = self._shadows(decision, observation, session)
        status = "pending" if shadowed else "complete"
        if shadowed and decision.route is Route.REAL:
            route_note = f"sampled for shadow (shadow rate {self._shadow_rate(decision):g})"
        if shadowed and not await self.shadow.has_room():  # type: ignore[union-attr]
            # Bounded shadow work: the agent's path never waits for it.
            self.shadow.skipped += 1  # type: ignore[union-attr]
            shadowed = False
            if decision.route is Route.SHADOW:
                status, route_note = "skipped", "shadow skipped: the shadow queue is full (shadow.queue_size)"
            else:
                status, route_note = "complete", "shadow sample skipped: the shadow queue is full (shadow.queue_size)"
        history = list(session.history) if shadowed else []
        record = self._record(pending, observation, "; ".join(n for n in (route_note, note) if n), status=status)
        for watcher in self.watchers:  # the record writer first: durable (or spooled) before the agent sees the result
            try:
                await watcher.finished(pending, record)
            except RecordError as exc:
                log.error("%s", exc)
                observation = Observation.error(f"{exc}. The call's answer is withheld.")
                shadowed = False
        # The world model's history: as stored (redacted), a perturbed turn marked (never an example).
        fault = pending.perturbation is not None and pending.perturbation.is_fault
        session.add_turn(Turn(record.call, record.served, perturbed=record.perturbation is not None, not_run=fault))
        if pending.in_flight:
            pending.in_flight, session.in_flight = False, session.in_flight - 1
        session.touch()
        pins, marks, diverted = dict(session.pinned), set(session.side_effects), set(session.diverted)
        rehearsal.after_call(session, pending.call, decision)  # a diverted call keeps the session's world simulated
        learned.after_call(session, pending.call, decision)  # a real side effect makes that server's recordings stale
        if len(session.diverted) != len(diverted):  # shared before the sim pin: a pin without its mark would let a read go real
            await self._save_diverted(session, session.diverted - diverted)
        if session.pinned != pins:
            await self._save_pins(session)
        if len(session.side_effects) != len(marks):  # marks only grow
            await self._save_side_effects(session, session.side_effects - marks)
        if shadowed:
            assert self.shadow is not None
            with as_current(pending):  # tracing on: the shadow work's span is a child of the call's
                await self.shadow.submit(record, history)
        return Outcome(observation, record)

    async def cancel(self, pending: Pending, reason: str = "cancelled by the agent before an answer") -> Outcome:
        """Record a call that ended without an answer."""
        return await self.complete(pending, Observation.error(reason), note="cancelled")

    async def reject(self, call: Call, session: Session, *, policy: str, reason: str, record_id: str | None = None) -> Outcome:
        """Record a call refused before routing (arguments failing the tool's schema, an
        unknown tool, a session cap, a refused tunnel)."""
        stored_call = self._redacted(call, session)
        keys = self.replay.keys(stored_call)
        step, occurrence = await self._claim(session, keys.replay)
        pending = Pending(call, session, Decision(Route.DENY, policy, reason), occurrence, keys, stored_call, step=step)
        if record_id is not None:
            pending.record_id = record_id
        return await self.complete(pending, Observation.error(reason))

    async def remark(self, call: Call, session: Session, *, policy: str, text: str, structured: dict | None = None) -> Outcome:
        """Record something simroute did itself in a session that routed nothing (an
        episode's reset, verification, close or reaping): provenance `none`, not an error,
        the route `deny` (nothing reached any side)."""
        stored_call = self._redacted(call, session)
        keys = self.replay.keys(stored_call)
        step, occurrence = await self._claim(session, keys.replay)
        pending = Pending(call, session, Decision(Route.DENY, policy, text), occurrence, keys, stored_call, step=step)
        observation = Observation([{"type": "text", "text": text}], Provenance.NONE, structured=structured)
        return await self.complete(pending, observation)

    def _record(self, pending: Pending, observation: Observation, note: str, *, status: str) -> Record:
        unperturbed = pending.unperturbed
        if self.redactor is not None:
            observation = self.redactor.observation(observation, session_id=pending.call.session_id)
            if unperturbed is not None:
                unperturbed = self.redactor.observation(unperturbed, session_id=pending.call.session_id)
        return Record(
            call=pending.stored_call,
            decision=pending.decision,
            served=observation,
            step=pending.step,
            call_key=pending.keys.exact,
            id=pending.record_id,
            ts=pending.ts,
            note=note,
            status=status,
            occurrence=pending.occurrence,
            replay_key=pending.keys.replay,
            key_scheme=self.replay.scheme,
            recording=self.replay_modes.recording,
            owner=self.owner,
            reads_only=pending.reads_only(),
            ended=None if status == "started" else time.time(),
            perturbation=pending.perturbation.meta() if pending.perturbation is not None else None,
            unperturbed=unperturbed,
        )

    def _shadows(self, decision: Decision, observation: Observation, session: Session) -> bool:
        """Whether the simulated side runs off-path for this call: always for the shadow
        route, for a `shadow_rate` sample of real calls; only when real answered. An
        episode's sample is drawn from its seed."""
        if self.shadow is None or observation.provenance is not Provenance.REAL:
            return False
        if decision.route is Route.SHADOW:
            return True
        rate = self._shadow_rate(decision)
        seed = session.seeded(session.steps)
        draw = random.Random(seed).random() if seed is not None else self.rng.random()
        return decision.route is Route.REAL and rate > 0 and draw < rate

    def _shadow_rate(self, decision: Decision) -> float:
        """A rule's `shadow_rate` wins over the configured `shadow.rate`."""
        return decision.shadow_rate if decision.shadow_rate is not None else self.shadow_rate

    async def _execute(self, pending: Pending) -> tuple[Observation | None, str]:
        """(observation, note) of the decided route; observation None: the real side answers."""
        decision, session = pending.decision, pending.session
        route = decision.route
        if route is Route.REAL:
            return None, ""
        if route is Route.SHADOW:
            return None, "" if self.shadow is not None else "shadow: no world model configured, served real only"
        if route is Route.SIM:  # a paginated listing is asked for whole
            return await self._sim(pending.stored_call, session, decision.deadline_s, self.perturber.route_steer(pending)), ""
        if route is Route.DENY:
            return Observation.error(f"simroute denied this call ({decision.policy}): {decision.reason}"), ""
        assert route is Route.REPLAY
        steer = self.perturber.route_steer(pending)
        return await replay_route(
            pending,
            self.replay,
            self.replay_modes,
            self.virtual,
            lambda: self._sim(pending.stored_call, session, decision.deadline_s, steer),
        )

    async def _sim(self, call: Call, session: Session, deadline_s: float | None = None, steer: Steer | None = None) -> Observation:
        if (call.channel, call.tool) in _NOT_SIMULATED:
            return Observation.error(f"simroute: the sim route does not simulate {call.tool} yet (route it real, replay or deny)")
        if self.simulator is None:
            return Observation.error("simroute: the sim route needs a world model, and none is configured (see the world_model section)")
        try:
            return await self.simulator.simulate(call, session, deadline_s=deadline_s or self.sim_deadline_for(call), steer=steer)
        except Exception as exc:
            log.exception("simulating %s.%s failed", call.server, call.tool)
            return Observation.error(f"simroute: the simulator failed: {type(exc).__name__}: {exc}")
