"""The perturbation addon: which plan a call falls under, its call numbers
claimed from session state, the pure decision (policies/perturbation), and its
application to what the agent gets — the same on every route.

- a fault (`error`, `timeout`, `rate_limit`) answers instead of the call: the call
  reaches no side (on `real` nothing is forwarded, so the real world never changes
  behind an answer the agent saw as failed); its observation has provenance `none`;
- `latency` delays the call before its route runs;
- `empty` and `truncate` change the answer after the route ran; the changed answer
  has provenance `none` (simroute made it) and the record keeps the route's answer;
- `paginate` cuts a listing the route answered into pages (pages.py):
  the agent gets the first with a cursor, the rest wait in session state, and a
  follow-up call with a cursor gets its page from there (no side is asked again);
  on `sim` the world model is told the listing is paginated and gives it whole;
- `mislead` moves the route's answer's facts by the seed, keeping their types and
  format (mutation.py): provenance `none`, and the record keeps the route's answer;
  a rule with `mislead_with: world_model` has the world model re-answer with the
  route's answer as the ground truth it must not give
  (backends/world_model/steering.py): plausible, well-formed for the tool, wrong;
  provenance `sim`.

A perturbed answer is never a replay source, a learned-router label or a world-model
example: those read only answers of provenance `real` (or `sim`, for labels), and a
perturbed record is marked (`Record.perturbation`) for the readers that look further.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

import anyio

from backends.world_model.steering import mislead
from calls import ANSWER_KINDS, Call, Observation, Perturbation, Route, Session, Steer
from policies.perturbation import PerturbationsConfig, PerturbationState, Plan, compile_plan
from records.shared_state.session_state import SessionState, count_locally
from records.store.protocol import StoreError
from router.addons.perturbation.fault_shapes import fault_observation, shaped_observation
from router.addons.perturbation.mutation import mutated
from router.addons.perturbation.pages import cursor_for, cursor_in, listing_of, pages_of
from router.engine.addons import CallAddon

if TYPE_CHECKING:
    from records.redaction import Redactor
    from router.engine.parts import EngineParts
    from router.engine.pending import Pending

log = logging.getLogger("simroute.engine")

# The engine's sim route: (call, session, deadline_s, steer) -> the simulated answer.
SimRoute = Callable[[Call, Session, float | None, Steer | None], Awaitable[Observation]]


class Perturber(CallAddon):
    def __init__(self, plans: Mapping[str, Plan] | None = None, *, default: str | None = None) -> None:
        self.plans = dict(plans or {})
        if default is not None and default not in self.plans:
            raise ValueError(f"the default perturbation plan {default!r} is not one of the plans")
        self.default = default
        # Whether any call could be perturbed by a configured plan (an episode's own plan counts apart).
        self.active = bool(self.plans)
        self.engine: EngineParts | None = None

    # --- the hooks -------------------------------------------------------------------

    def load(self, engine: EngineParts) -> None:
        self.engine = engine

    async def decided(self, pending: Pending) -> None:
        if self.engine is None or not (self.active or own_plan(pending.session) is not None):
            return
        pending.perturbation = await self.decide(pending, self.engine.session_state)
        pending.steer = self.route_steer(pending)

    async def route(self, pending: Pending) -> Observation | None:
        return await self.before_route(pending) if pending.perturbation is not None else None

    async def answered(self, pending: Pending, observation: Observation) -> Observation:
        if pending.perturbation is None or self.engine is None:
            return observation
        engine = self.engine  # a mislead's truth is redacted first
        sim = engine.simulate if engine.simulator is not None else None
        observation, perturbed = await self.after_route(
            pending, observation, state=engine.session_state, sim=sim, redactor=engine.redactor
        )
        pending.route_note = "; ".join(n for n in (pending.route_note, perturbed) if n)
        return observation

    # --- the steps -------------------------------------------------------------------

    @classmethod
    def from_config(cls, config: PerturbationsConfig) -> Perturber:
        return cls({name: compile_plan(name, plan) for name, plan in config.plans.items()}, default=config.apply)

    def plan_for(self, session: Session, plan_name: str | None) -> Plan | None:
        """An episode's own plan, else the plan the deciding rule names, else the default."""
        if (own := own_plan(session)) is not None:
            return own
        name = plan_name or self.default
        return self.plans.get(name) if name is not None else None

    async def decide(self, pending: Pending, state: SessionState) -> Perturbation | None:
        """The call's perturbation (None: none). Claims the matching rules' call numbers.
        A denied call stays a denial: it is neither perturbed nor counted."""
        session, call = pending.session, pending.stored_call
        plan = self.plan_for(session, pending.decision.perturbation)
        if plan is None or pending.decision.route is Route.DENY:
            return None
        cursor = cursor_in(call)
        if cursor is not None and (page := await _page(state, session, cursor)) is not None:
            if (page["channel"], page["server"], page["tool"]) == (call.channel, call.server, call.tool):
                pending.page = Observation.from_json(page["observation"])
                return Perturbation(**page["perturbation"])
        matched = plan.matching(call, pending.decision.safety)
        if not matched:
            return None
        counters = [counter for _, counter in matched]
        try:
            numbers = await state.claim(session, PerturbationState, counters)
        except StoreError as exc:  # shared state unreachable: this replica counts alone until it returns
            log.warning(
                "shared perturbation counters unavailable (%s); counting session %s locally", exc, session.id[:8]
            )
            numbers = count_locally(session.slice(PerturbationState), counters)
        seed, key = plan.key(session.id, session.seed)
        return plan.decide(
            [(rule, n) for (rule, _), n in zip(matched, numbers, strict=True)], seed=seed, key=key, step=pending.step
        )

    @staticmethod
    async def before_route(pending: Pending) -> Observation | None:
        """Before the route runs: a latency waits; a fault (after its hang, for a timeout)
        is the answer (None: the route runs)."""
        perturbation = pending.perturbation
        if perturbation is None:
            return None
        if pending.page is not None:  # a follow-up with a cursor: its page, kept in session state
            return pending.page
        if perturbation.kind == "latency" or perturbation.kind == "timeout":
            await anyio.sleep(perturbation.delay_s)
        if not perturbation.is_fault:
            return None
        return fault_observation(pending.call, perturbation, pending.session.history, latency_s=perturbation.delay_s)

    @staticmethod
    def route_steer(pending: Pending) -> Steer | None:
        """The world model's steer on the sim route's own answer: a listing to paginate
        is asked for whole, and checked to be a listing."""
        perturbation = pending.perturbation
        if perturbation is None or perturbation.kind != "paginate" or pending.page is not None:
            return None
        call, size = pending.stored_call, perturbation.page_size
        # Told mildly: asked for "every item, more than a page", the bundled model repeated
        # items until its tokens ran out.
        instruction = (
            f"## Perturbation for this action: paginate\nThe agent is given this listing in pages of {size} items: "
            "answer with the whole listing, as the server returns it."
        )
        return Steer(
            "paginate",
            instruction,
            check=lambda o: None if listing_of(call, o) is not None else "not a listing to paginate",
        )

    async def after_route(
        self,
        pending: Pending,
        observation: Observation,
        *,
        state: SessionState,
        sim: SimRoute | None,
        redactor: Redactor | None = None,
    ) -> tuple[Observation, str]:
        """(what the agent gets, the record's remark on the perturbation); the route's own
        answer, when a perturbation changed it, is kept as `pending.unperturbed`. `sim`:
        the engine's sim route (None: no world model); `redactor`: a mislead's truth
        reaches the world model redacted, as the session's history does."""
        perturbation = pending.perturbation
        assert perturbation is not None
        changed: Observation | None = None
        # The front door changed it already (a streamed HTTP body, cut as it passed)
        if pending.unperturbed is not None:
            return observation, self.note(pending, str(pending.decision.route))
        if perturbation.kind in ANSWER_KINDS and not observation.is_error and pending.page is None:
            if perturbation.kind == "mislead" and not perturbation.by_world_model:
                changed = mutated(observation, perturbation, pending.session.history)
            elif perturbation.kind == "mislead":
                changed = await self._mislead(pending, observation, sim, redactor)
            elif perturbation.kind == "paginate":
                changed = await self._paginate(pending, perturbation, observation, state)
            else:
                changed = shaped_observation(pending.call, perturbation, observation)
        if changed is not None:
            pending.unperturbed = observation
        return changed or observation, self.note(pending, str(pending.decision.route))

    @staticmethod
    async def _mislead(
        pending: Pending, truth: Observation, sim: SimRoute | None, redactor: Redactor | None
    ) -> Observation:
        if sim is None:
            return Observation.error(_NO_WORLD_MODEL)
        if redactor is not None:
            truth = redactor.observation(truth, session_id=pending.call.session_id)
        return await sim(pending.stored_call, pending.session, pending.decision.deadline_s, mislead(truth))

    @staticmethod
    async def _paginate(
        pending: Pending, perturbation: Perturbation, observation: Observation, state: SessionState
    ) -> Observation | None:
        """The first page (None: the answer is not a listing of more than a page); the
        others kept in session state by their cursors."""
        session = pending.session
        pages = pages_of(pending.call, observation, perturbation, session.id)
        if pages is None:
            return None
        first = pending.perturbation = replace(perturbation, page=1)
        meta = {field: getattr(first, field) for field in ("kind", "rule", "seed", "n", "page_size", "cursor_argument")}
        call, kept = pending.call, {}
        for index, page in enumerate(pages[1:], start=2):
            kept[cursor_for(first, session.id, index)] = {
                "channel": call.channel,
                "server": call.server,
                "tool": call.tool,
                "of": pending.record_id,
                "pages": len(pages),
                "observation": page.to_json(),
                "perturbation": {**meta, "page": index},
            }
        try:
            session.slice(PerturbationState).pages.update(kept)  # kept here first: a replica alone still serves them
            await state.save(session, PerturbationState)
        except StoreError as exc:  # shared state unreachable: this replica keeps the pages
            log.warning("pages of a listing not shared (%s); kept for session %s locally", exc, session.id[:8])
        return pages[0]

    @staticmethod
    def note(pending: Pending, route: str) -> str:
        """The record's remark on a perturbed call ("" when it says nothing new)."""
        perturbation = pending.perturbation
        if perturbation is None or (
            perturbation.kind in ANSWER_KINDS and pending.unperturbed is None and pending.page is None
        ):
            return ""
        what = f"perturbation {perturbation.kind} ({perturbation.rule}, call {perturbation.n})"
        if perturbation.is_fault:
            return f"{what}: answered by simroute; the call was not sent to the {route} side"
        if pending.page is not None:
            return (
                f"{what}: page {perturbation.page} of a listing, from "
                f"session state; the call was not sent to the {route} side"
            )
        if perturbation.kind == "paginate":
            return (
                f"{what}: the {route} answer was cut into pages, this the first (the record keeps it as `unperturbed`)"
            )
        if perturbation.kind in ANSWER_KINDS:
            return f"{what}: the {route} answer was changed (the record keeps it as `unperturbed`)"
        return f"{what}: delayed {perturbation.delay_s:.3f}s"


_NO_WORLD_MODEL = (
    "simroute: the mislead perturbation needs a world model, and none is configured (see the world_model section)"
)


def own_plan(session: Session) -> Plan | None:
    """An episode's own perturbation plan (None: the configured ones apply)."""
    state = session.find(PerturbationState)
    return state.plan if state is not None else None


async def _page(state: SessionState, session: Session, cursor: str) -> dict | None:
    try:
        found = await state.read(session, PerturbationState, cursor)
    except StoreError as exc:  # shared state unreachable: what this replica kept
        log.warning("pages of a listing unavailable (%s); reading session %s's own", exc, session.id[:8])
        own = session.find(PerturbationState)
        return own.pages.get(cursor) if own is not None else None
    return json.loads(found) if found is not None else None
