"""The upstream guard: protects the real side. A step the engine runs right before a
real backend is called (after the route is decided: policies stay pure), the same on
every channel: per upstream (an MCP server, an HTTP host, the shell sandbox pool, the
browser) a concurrency cap, a call budget per token and window, and a circuit breaker
(the rules and their state, local or shared through Redis: records/shared_state/guard_slots.py).

A refused call never reaches the real side: the agent gets simroute's own answer
(provenance `none`) in its channel's shape (shapes.py), and the record's note
says which check refused it. A route that could have fallen back (shadow) is not
simulated instead: a session does not silently hop from the real side to the
simulated one; the agent sees the refusal and may retry after `Retry-After`.

What counts as a failure of the real side: `router.engine.real_calls.outcome_of`.

If the shared state (Redis) cannot be reached, the call goes through unguarded (the
record says so) rather than every upstream being refused because of the store.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable

import anyio

from backends.replay import namespace_of
from calls import Call, Observation
from records.shared_state.guard_slots import CLOSED, GuardState, Limits, LocalGuardState, Refusal, Verdict
from records.store.protocol import StoreError
from router.addons.upstream_guard.shapes import refusal_observation
from router.addons.upstream_guard.state import Outcome, Refused, Ticket
from router.engine.addons import CallAddon
from router.engine.pending import Pending

log = logging.getLogger("simroute.guard")

_TICKET = "upstream_guard.ticket"
LEASE_MARGIN_S = 10.0  # a slot outlives its call's deadline by this much before it frees itself


def upstream_of(call: Call) -> str:
    """The upstream a call's real side reaches: the MCP server or HTTP host (`host[:port]`)
    it names, or the shell sandbox pool (`shell`) and the browser (`browser`)."""
    return call.channel if call.channel in ("shell", "browser") else call.server


def token_of(session_id: str) -> str:
    """The token a (namespaced) session id belongs to ('' without tokens): budgets are per token."""
    return namespace_of(session_id).removesuffix("/")


class UpstreamGuard(CallAddon):
    """The guard, and the call addon that brackets every real send with it: a ticket
    taken in `before_real` (or the refusal answered instead), released in `after_real`
    with how the real side did (never cancelled half-way)."""

    def __init__(
        self,
        *,
        state: GuardState | None = None,
        limits_for: Callable[[str], Limits] = lambda upstream: Limits(),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.state = state or LocalGuardState()
        self.limits_for = limits_for
        self.clock = clock
        # For /metrics (this process's view): refusals by (upstream, reason), calls in
        # flight by upstream, each breaker's state as last seen here.
        self.refusals: Counter[tuple[str, str]] = Counter()
        self.in_flight: Counter[str] = Counter()
        self.breakers: dict[str, str] = {}
        self.unavailable = 0  # checks the shared state could not make (the call went unguarded)

    async def admit(self, call: Call, *, deadline_s: float) -> Ticket | Refused | None:
        """A ticket to call the real side, a refusal, or None: the guard's state could
        not be reached and the call goes unguarded."""
        upstream = upstream_of(call)
        limits = self.limits_for(upstream)
        slot = uuid.uuid4().hex
        try:
            verdict = await self.state.acquire(
                upstream,
                token_of(call.session_id),
                limits,
                slot=slot,
                lease_s=deadline_s + LEASE_MARGIN_S,
                now=self.clock(),
            )
        except StoreError as exc:
            self.unavailable += 1
            log.warning("upstream guard unavailable, %s.%s goes unguarded: %s", call.server, call.tool, exc)
            return None
        self.breakers[upstream] = verdict.breaker
        if not verdict.admitted:
            assert verdict.refusal is not None
            self.refusals[(upstream, str(verdict.refusal))] += 1
            return Refused(upstream, verdict.refusal, verdict.retry_after_s, _message(call, upstream, limits, verdict))
        self.in_flight[upstream] += 1
        return Ticket(upstream, limits, slot, verdict.trial)

    async def release(self, ticket: Ticket, outcome: Outcome) -> None:
        """Free the ticket's slot and tell the breaker how the real side did."""
        self.in_flight[ticket.upstream] -= 1
        if self.in_flight[ticket.upstream] <= 0:  # many hosts: only upstreams with calls in flight are listed
            del self.in_flight[ticket.upstream]
        try:
            state = await self.state.release(
                ticket.upstream, ticket.limits, slot=ticket.slot, trial=ticket.trial, outcome=outcome, now=self.clock()
            )
        except StoreError as exc:  # the slot's lease frees it; this outcome is lost to the breaker
            self.unavailable += 1
            log.warning("upstream guard: releasing a slot of %r failed: %s", ticket.upstream, exc)
            return
        if state != self.breakers.get(ticket.upstream, CLOSED):
            log.warning("upstream %r: circuit breaker %s", ticket.upstream, state.replace("_", "-"))
        self.breakers[ticket.upstream] = state

    async def before_real(self, pending: Pending, deadline_s: float) -> Observation | None:
        ticket = await self.admit(pending.call, deadline_s=deadline_s)
        note = (
            ticket.note
            if isinstance(ticket, Refused)
            else "upstream guard unavailable: sent unguarded"
            if ticket is None
            else ""
        )
        if note:  # the record says why the call was refused, or went unguarded
            pending.route_note = "; ".join(n for n in (pending.route_note, note) if n)
        if isinstance(ticket, Refused):
            return refusal_observation(pending.call, ticket, pending.session.history)
        pending.metadata[_TICKET] = ticket
        return None

    async def after_real(self, pending: Pending, observation: Observation | None, outcome: Outcome) -> None:
        ticket = pending.metadata.pop(_TICKET, None)
        if ticket is not None:
            with anyio.CancelScope(shield=True):
                await self.release(ticket, outcome)


def _message(call: Call, upstream: str, limits: Limits, verdict: Verdict) -> str:
    retry = f"retry after {max(1, round(verdict.retry_after_s))}s"
    why = {
        Refusal.BREAKER_OPEN: f"its circuit breaker is open after {limits.breaker_failures} consecutive failures of "
        "the real side",
        Refusal.BREAKER_TRIAL: "its circuit breaker is half-open and its one trial call is in flight",
        Refusal.CONCURRENCY: f"{limits.max_concurrent} call(s) to it are already in flight (upstream_guard "
        "max_concurrent)",
        Refusal.BUDGET: f"this token's budget of {limits.budget} calls per {limits.budget_window_s:g}s is spent "
        "(upstream_guard budget)",
    }[verdict.refusal or Refusal.BREAKER_OPEN]
    return f"simroute: {call.tool!r} was not sent to upstream {upstream!r}: {why}; {retry}"
