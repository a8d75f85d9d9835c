"""The upstream guard: protects the real side. A step the engine runs right before a
real backend is called (after the route is decided: policies stay pure), the same on
every channel: per upstream (an MCP server, an HTTP host, the shell sandbox pool, the
browser) a concurrency cap, a call budget per token and window, and a circuit breaker
(guard_state.py has the rules, guard_redis.py shares them across replicas).

A refused call never reaches the real side: the agent gets simroute's own answer
(provenance `none`) in its channel's shape (guard_shapes.py), and the record's note
says which check refused it. A route that could have fallen back (shadow) is not
simulated instead: a session does not silently hop from the real side to the
simulated one; the agent sees the refusal and may retry after `Retry-After`.

What counts as a failure of the real side: a deadline passed, a connection or
transport error, a 5xx answer, i.e. an answer simroute made itself because the real
side did not answer (provenance `none`) or an HTTP status >= 500. A tool's own error
(`isError` from the upstream, a command's non-zero exit) is an answer: a success.

If the shared state (Redis) cannot be reached, the call goes through unguarded (the
record says so) rather than every upstream being refused because of the store.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from backends.replay import namespace_of
from router.engine.guard_state import CLOSED, GuardState, Limits, LocalGuardState, Outcome, Refusal, Verdict
from router.types import Call, Observation, Provenance
from shadow.store.protocol import StoreError

log = logging.getLogger("simroute.guard")

LEASE_MARGIN_S = 10.0  # a slot outlives its call's deadline by this much before it frees itself


@dataclass(frozen=True, slots=True)
class Ticket:
    """An admitted call's claim: released when its real side has answered."""

    upstream: str
    limits: Limits
    slot: str
    trial: bool


@dataclass(frozen=True, slots=True)
class Refused:
    upstream: str
    refusal: Refusal
    retry_after_s: float
    message: str

    @property
    def note(self) -> str:
        return f"upstream guard refused the real call ({self.refusal}): nothing was sent to {self.upstream!r}"


def upstream_of(call: Call) -> str:
    """The upstream a call's real side reaches: the MCP server or HTTP host (`host[:port]`)
    it names, or the shell sandbox pool (`shell`) and the browser (`browser`)."""
    return call.channel if call.channel in ("shell", "browser") else call.server


def token_of(session_id: str) -> str:
    """The token a (namespaced) session id belongs to ('' without tokens): budgets are per token."""
    return namespace_of(session_id).removesuffix("/")


def outcome_of(call: Call, observation: Observation, *, raised: bool = False, session_closed: bool = False) -> Outcome:
    """How the real side did, for the breaker (see the module's docstring). A call whose
    session closed while it ran failed because simroute tore that session's upstream
    down: it says nothing of the upstream."""
    if session_closed:
        return Outcome.NEUTRAL
    if raised:
        return Outcome.FAILURE
    structured = observation.structured
    if call.channel == "http" and isinstance(structured, dict) and isinstance(structured.get("status"), int):
        return Outcome.FAILURE if structured["status"] >= 500 else Outcome.SUCCESS
    if call.channel == "browser":  # its own refusals (address policies) are provenance none too: only deadlines count
        return Outcome.SUCCESS
    return Outcome.FAILURE if observation.is_error and observation.provenance is Provenance.NONE else Outcome.SUCCESS


class UpstreamGuard:
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
                upstream, token_of(call.session_id), limits, slot=slot, lease_s=deadline_s + LEASE_MARGIN_S, now=self.clock()
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


def _message(call: Call, upstream: str, limits: Limits, verdict: Verdict) -> str:
    retry = f"retry after {max(1, round(verdict.retry_after_s))}s"
    why = {
        Refusal.BREAKER_OPEN: f"its circuit breaker is open after {limits.breaker_failures} consecutive failures of the real side",
        Refusal.BREAKER_TRIAL: "its circuit breaker is half-open and its one trial call is in flight",
        Refusal.CONCURRENCY: f"{limits.max_concurrent} call(s) to it are already in flight (upstream_guard max_concurrent)",
        Refusal.BUDGET: f"this token's budget of {limits.budget} calls per {limits.budget_window_s:g}s is spent (upstream_guard budget)",
    }[verdict.refusal or Refusal.BREAKER_OPEN]
    return f"simroute: {call.tool!r} was not sent to upstream {upstream!r}: {why}; {retry}"
