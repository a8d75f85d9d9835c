"""The engine: a `Call` goes through the policies, the decision runs against the
backends, and the record is written before the agent sees the result. Per-call
features plug in as call addons (router/engine/addons.py; the runtime's list:
router/runtime/addon_chain.py); the routes' own answers are in routes.py.

Every call leaves a record, whatever ended it: an answer, a denial, a deadline, a
backend that raised, a client that hung up. A real call not known to be read-only is
written ahead (`started`) before it runs: a crash after a side effect leaves a trace.

Errors become observations the agent sees and records, never exceptions in a front
door: a policy that raises denies the call (policy `engine`); a backend or an addon's
`route` or `before_real` that raises answers with an error observation; a deadline
answers simroute's own error (provenance `none`); `RecordError` before a real call
keeps it from running, after it withholds the answer; `StoreError` from shared
session state makes the replica count the session alone. Cancellation is recorded
(`cancelled`) and re-raised.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

import anyio

from backends.replay import ReplayBackend
from calls import (
    Call,
    CallNext,
    Decision,
    Forks,
    Observation,
    Provenance,
    Route,
    Session,
    Simulator,
    Steer,
    Turn,
)
from policies.base import Policy, decide
from records.owners import this_process_owner
from records.record import Record
from records.redaction import Redactor, typed_into
from records.shared_state.session_state import LocalSessionState, SessionState, claim_locally
from records.store.protocol import RecordError, StoreError
from records.store.record_log import RecordLog
from router.engine.addons import Addons, CallAddon
from router.engine.parts import Deadlines
from router.engine.pending import Outcome, Pending
from router.engine.real_calls import RealOutcome, bounded, call_real, outcome_of
from router.engine.record_of import record_of
from router.engine.record_writer import RecordWriter
from router.engine.replay_modes import ReplayModes
from router.engine.routes import execute, sim_route
from router.engine.trace_context import as_current

log = logging.getLogger("simroute.engine")

_FALLBACK = Decision(Route.REAL, "default", "no policy answered")
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
        session_state: SessionState | None = None,
        addons: Sequence[CallAddon] = (),
        deadlines: Deadlines | None = None,
        forks: Forks | None = None,
    ) -> None:
        self.policies = list(policies)
        self.records = records
        self.replay = replay
        self.replay_modes = replay_modes or ReplayModes()
        self.simulator = simulator
        self.forks = forks
        self.session_state = session_state or LocalSessionState()
        self.deadlines = deadlines or Deadlines()
        # Secrets never reach a record, a spool line, the world model or a replay key (set at start).
        self.redactor: Redactor | None = None
        # The record writer first: every call leaves a record (router/engine/addons.py).
        self.addons = Addons([RecordWriter(records), *addons])
        self.addons.load(self)
        self.owner = this_process_owner()

    async def handle(
        self, call: Call, session: Session, real: CallNext, *, note: str = "", read_only: bool = False
    ) -> Outcome:
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
        addons (the noise learner probes a sample of real calls known read-only off
        the agent's path). `again` runs under the call's deadline, redacted like the record."""
        deadline = pending.decision.deadline_s or self.deadlines.real(pending.call)
        return self.addons.repeatable(pending, record, bounded(again, deadline, self.redactor, pending.call.session_id))

    # The steps of `handle`, for front doors whose real side does not fit one awaited
    # call (the HTTP proxy forwards the request itself and sees the answer in a later hook).

    async def begin(self, call: Call, session: Session, *, read_only: bool = False) -> Pending:
        """Claim the call's step and occurrence, and decide its route (pure policies, no
        I/O). A policy that raises denies the call: nothing goes real undecided."""
        pending = await self._claimed(call, session, _FALLBACK, read_only=read_only)
        setup = session.episode  # an episode's own policy chain, else the runtime's
        policies = list(setup.policies) if setup is not None and setup.policies else self.policies
        try:
            pending.decision = decide(policies, call, session, fallback=_FALLBACK)
        except Exception as exc:
            log.exception("deciding %s.%s failed", call.server, call.tool)
            pending.decision = Decision(Route.DENY, "engine", f"a routing policy failed: {type(exc).__name__}: {exc}")
        try:
            await self.session_state.save(session)  # what the policies marked (a stateful channel's pin)
        except StoreError as exc:  # kept on this replica; shared with its next save
            log.warning("session state of %s not shared: %s", session.id[:8], exc)
        pending.in_flight, session.in_flight = True, session.in_flight + 1  # a session busy with a call is not idle
        await self.addons.decided(pending)
        return pending

    async def _claimed(self, call: Call, session: Session, decision: Decision, *, read_only: bool = False) -> Pending:
        """The call redacted, keyed, and its step and occurrence claimed."""
        stored_call = call if self.redactor is None else self.redactor.call(call, target_name=typed_into(call, session))
        keys = self.replay.keys(stored_call)
        try:
            step, occurrence = await self.session_state.begin(session, keys.replay)
        except StoreError as exc:  # shared state unreachable: this replica counts alone until it returns
            log.warning("shared session state unavailable (%s); counting session %s locally", exc, session.id[:8])
            step, occurrence = claim_locally(session, keys.replay)
        return Pending(call, session, decision, occurrence, keys, stored_call, step=step, read_only=read_only)

    async def serve(self, pending: Pending) -> Observation | None:
        """The observation of a route that needs no real side (sim, replay, deny), or
        None when the real side must answer; `pending.needs_real` then says so too.
        An addon's `route` may answer first (a perturbation's fault); a backend that
        raises answers with an error observation (recorded as any)."""
        try:
            observation = await self.addons.route(pending)
            if observation is None:
                observation, pending.route_note = await execute(self, pending)
        except Exception as exc:
            log.exception("serving %s.%s by %s failed", pending.call.server, pending.call.tool, pending.decision.route)
            observation = Observation.error(
                f"simroute: the {pending.decision.route} route failed: {type(exc).__name__}: {exc}"
            )
        pending.needs_real = observation is None
        return observation

    async def write_ahead(self, pending: Pending) -> None:
        """Before a real call with possible side effects: its record, `started`.
        Raises RecordError when it cannot be written (the call must not run)."""
        if pending.read_only or pending.written_ahead:
            return
        started = record_of(self, pending, Observation.error(_STARTED), pending.route_note, status="started")
        # The record writer first: a RecordError keeps the call from running.
        await self.addons.sending(pending, started)
        pending.written_ahead = True

    async def run_real(self, pending: Pending, real: CallNext) -> Observation:
        """The real side under the call's deadline (a rule's `deadline_s` wins), written
        ahead first, inside the addons' bracket (a refused call is answered, never sent).
        A front door that sends the request itself brackets it the same way (`addons`)."""
        call = pending.call
        deadline = pending.decision.deadline_s or self.deadlines.real(call)
        refused = await self.addons.before_real(pending, deadline)
        if refused is not None:
            await self.addons.after_real(pending, None, RealOutcome.NEUTRAL)
            return refused
        observation, outcome = None, RealOutcome.NEUTRAL  # cancelled or never sent: nothing learned about the real side
        try:
            await self.write_ahead(pending)
            with as_current(pending):  # what reaches the upstream continues the call's trace
                observation, raised = await call_real(call, real, deadline)
            outcome = outcome_of(call, observation, raised=raised, session_closed=pending.session.closed)
            return observation
        finally:
            await self.addons.after_real(pending, observation, outcome)

    async def complete(self, pending: Pending, observation: Observation, *, note: str = "") -> Outcome:
        """Record what the agent gets, the addons having changed it (`answered`). If the
        record cannot be written, the agent gets an error instead of an unrecorded answer."""
        session = pending.session
        observation = await self.addons.answered(pending, observation)
        record = record_of(
            self, pending, observation, "; ".join(n for n in (pending.route_note, note) if n), status=pending.status
        )
        # The record writer first: durable before the agent sees it.
        failed = await self.addons.finished(pending, record)
        if failed is not None:
            observation = Observation.error(f"{failed}. The call's answer is withheld.")
        # The world model's history: as stored (redacted), a perturbed turn marked (never an example).
        fault = pending.perturbation is not None and pending.perturbation.is_fault
        session.add_turn(Turn(record.call, record.served, perturbed=record.perturbation is not None, not_run=fault))
        if pending.in_flight:
            pending.in_flight, session.in_flight = False, session.in_flight - 1
        session.touch()
        return Outcome(observation, record)

    async def cancel(self, pending: Pending, reason: str = "cancelled by the agent before an answer") -> Outcome:
        """Record a call that ended without an answer."""
        return await self.complete(pending, Observation.error(reason), note="cancelled")

    async def reject(
        self, call: Call, session: Session, *, policy: str, reason: str, record_id: str | None = None
    ) -> Outcome:
        """Record a call refused before routing (arguments failing the tool's schema, an
        unknown tool, a session cap, a refused tunnel)."""
        pending = await self._claimed(call, session, Decision(Route.DENY, policy, reason))
        if record_id is not None:
            pending.record_id = record_id
        return await self.complete(pending, Observation.error(reason))

    async def remark(
        self,
        call: Call,
        session: Session,
        *,
        policy: str,
        text: str,
        structured: dict | None = None,
        route: Route = Route.DENY,
    ) -> Outcome:
        """Record something simroute did itself in a session that routed nothing (an
        episode's reset, verification, close or reaping): provenance `none`, not an error,
        the route `deny` (nothing reached any side) or its own (`verify`, `close`)."""
        pending = await self._claimed(call, session, Decision(route, policy, text))
        return await self.complete(
            pending, Observation([{"type": "text", "text": text}], Provenance.NONE, structured=structured)
        )

    async def simulate(
        self, call: Call, session: Session, deadline_s: float | None = None, steer: Steer | None = None
    ) -> Observation:
        """The sim route's answer (also what addons ask the world model through: a mislead)."""
        return await sim_route(self, call, session, deadline_s, steer)
