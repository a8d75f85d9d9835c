"""The shadow addon: which calls have their simulated side run off the agent's path
and compared (shadow/runner.py, or the Redis stream `simroute worker` consumes).

Always the `shadow` route's calls; a `shadow_rate` sample of real calls (a rule's
rate wins over the configured one; an episode's draw comes from its seed); only
when the real side answered. Shadow work is bounded: when the queue has no room the
agent's path does not wait, and the record says the work was skipped. The record is
`pending` until the work completes; the work is submitted once the record is written
(never for a withheld answer), under the call's trace span.

The shadow side is what the sim route would have served: where the session's world
state answers the call (`state_answer`: a shell line its executor runs, on a copy of
the state as it stood before this call's answer is learnt), that answer, no model call;
otherwise the world model's, off the agent's path. So a shadow pair's sub-provenance
(records/sub_provenance.py) measures each way the sim route answers.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from calls import Call, Decision, Observation, Provenance, Route, Session
from records.record import Record
from router.engine.addons import CallAddon
from router.engine.pending import Pending
from router.engine.trace_context import as_current
from shadow.runner import ShadowQueue

_HISTORY = "shadow.history"


class ShadowSampling(CallAddon):
    def __init__(
        self,
        queue: ShadowQueue,
        *,
        rate: float = 0.0,
        rng: random.Random | None = None,
        state_answer: Callable[[Call, Session], Observation | None] | None = None,
    ) -> None:
        self.queue = queue
        self.rate = rate  # the configured `shadow.rate` of real calls
        self.rng = rng or random.Random()
        self.state_answer = state_answer  # the session's world state's answer to a call, or None

    async def answered(self, pending: Pending, observation: Observation) -> Observation:
        decision, session = pending.decision, pending.session
        if not self._shadows(decision, observation, session):
            return observation
        if decision.route is Route.REAL:
            pending.route_note = f"sampled for shadow (shadow rate {self._rate(decision):g})"
        if not await self.queue.has_room():  # bounded: the agent's path never waits for it
            self.queue.skipped += 1
            if decision.route is Route.SHADOW:
                pending.status, pending.route_note = (
                    "skipped",
                    "shadow skipped: the shadow queue is full (shadow.queue_size)",
                )
            else:
                pending.route_note = "shadow sample skipped: the shadow queue is full (shadow.queue_size)"
            return observation
        pending.status = "pending"
        pending.metadata[_HISTORY] = list(session.history)  # the turns the world model is told, as of this call
        if self.state_answer is not None:
            pending.shadow = self.state_answer(pending.call, session)
        return observation

    async def finished(self, pending: Pending, record: Record) -> None:
        history = pending.metadata.pop(_HISTORY, None)
        if history is None or pending.withheld:
            return
        with as_current(pending):  # tracing on: the shadow work's span is a child of the call's
            await self.queue.submit(record, history)

    def _shadows(self, decision: Decision, observation: Observation, session: Session) -> bool:
        if observation.provenance is not Provenance.REAL:
            return False
        if decision.route is Route.SHADOW:
            return True
        rate = self._rate(decision)
        seed = session.seeded(session.steps)
        draw = random.Random(seed).random() if seed is not None else self.rng.random()
        return decision.route is Route.REAL and rate > 0 and draw < rate

    def _rate(self, decision: Decision) -> float:
        """A rule's `shadow_rate` wins over the configured `shadow.rate`."""
        return decision.shadow_rate if decision.shadow_rate is not None else self.rate
