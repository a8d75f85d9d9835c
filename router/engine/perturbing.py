"""The engine's perturbation step: which plan a call falls under, its call numbers
claimed from session state, the pure decision (policies/perturbation), and its
application to what the agent gets — the same on every route.

- a fault (`error`, `timeout`, `rate_limit`) answers instead of the call: the call
  reaches no side (on `real` nothing is forwarded, so the real world never changes
  behind an answer the agent saw as failed); its observation has provenance `none`;
- `latency` delays the call before its route runs;
- `empty` and `truncate` change the answer after the route ran; the changed answer
  has provenance `none` (simroute made it) and the record keeps the route's answer.

A perturbed answer is never a replay source, a learned-router label or a world-model
example: those read only answers of provenance `real` (or `sim`, for labels), and a
perturbed record is marked (`Record.perturbation`) for the readers that look further.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

import anyio

from policies.perturbation import PerturbationsConfig, Plan, compile_plan
from router.engine.fault_shapes import fault_observation, shaped_observation
from router.engine.session_state import SessionState, count_locally
from router.types import Observation, Perturbation, Route, Session
from shadow.store.protocol import StoreError

if TYPE_CHECKING:
    from router.engine.pending import Pending

log = logging.getLogger("simroute.engine")


class Perturber:
    def __init__(self, plans: Mapping[str, Plan] | None = None, *, default: str | None = None) -> None:
        self.plans = dict(plans or {})
        if default is not None and default not in self.plans:
            raise ValueError(f"the default perturbation plan {default!r} is not one of the plans")
        self.default = default
        # Whether any call could be perturbed by a configured plan (an episode's own plan counts apart).
        self.active = bool(self.plans)

    @classmethod
    def from_config(cls, config: PerturbationsConfig) -> Perturber:
        return cls({name: compile_plan(name, plan) for name, plan in config.plans.items()}, default=config.apply)

    def plan_for(self, session: Session, plan_name: str | None) -> Plan | None:
        """An episode's own plan, else the plan the deciding rule names, else the default."""
        if session.perturbation is not None:
            return session.perturbation
        name = plan_name or self.default
        return self.plans.get(name) if name is not None else None

    async def decide(self, pending: Pending, state: SessionState) -> Perturbation | None:
        """The call's perturbation (None: none). Claims the matching rules' call numbers.
        A denied call stays a denial: it is neither perturbed nor counted."""
        session, call = pending.session, pending.stored_call
        plan = self.plan_for(session, pending.decision.perturbation)
        if plan is None or pending.decision.route is Route.DENY:
            return None
        matched = plan.matching(call, pending.decision.safety)
        if not matched:
            return None
        counters = [counter for _, counter in matched]
        try:
            numbers = await state.count(session, counters)
        except StoreError as exc:  # shared state unreachable: this replica counts alone until it returns
            log.warning("shared perturbation counters unavailable (%s); counting session %s locally", exc, session.id[:8])
            numbers = count_locally(session, counters)
        seed, key = plan.key(session.id, session.seed)
        return plan.decide([(rule, n) for (rule, _), n in zip(matched, numbers, strict=True)], seed=seed, key=key, step=pending.step)

    @staticmethod
    async def before_route(pending: Pending) -> Observation | None:
        """Before the route runs: a latency waits; a fault (after its hang, for a timeout)
        is the answer (None: the route runs)."""
        perturbation = pending.perturbation
        if perturbation is None:
            return None
        if perturbation.kind == "latency" or perturbation.kind == "timeout":
            await anyio.sleep(perturbation.delay_s)
        if not perturbation.is_fault:
            return None
        return fault_observation(pending.call, perturbation, pending.session.history, latency_s=perturbation.delay_s)

    @staticmethod
    def after_route(pending: Pending, observation: Observation) -> tuple[Observation, Observation | None]:
        """(what the agent gets, the route's own answer when a perturbation changed it)."""
        perturbation = pending.perturbation
        if perturbation is None or perturbation.kind not in ("empty", "truncate") or observation.is_error:
            return observation, None
        return shaped_observation(pending.call, perturbation, observation), observation


def note_of(perturbation: Perturbation, route: str) -> str:
    """The record's remark on a perturbed call."""
    what = f"perturbation {perturbation.kind} ({perturbation.rule}, call {perturbation.n})"
    if perturbation.is_fault:
        return f"{what}: answered by simroute; the call was not sent to the {route} side"
    if perturbation.kind in ("empty", "truncate"):
        return f"{what}: the {route} answer was changed (the record keeps it as `unperturbed`)"
    return f"{what}: delayed {perturbation.delay_s:.3f}s"
