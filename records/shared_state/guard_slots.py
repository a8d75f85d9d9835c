"""The upstream guard's shared state: per upstream, a circuit breaker, leased
concurrency slots, and call budgets per token and window. `LocalGuardState` keeps it
in the process (one router, the embedded store); `RedisGuardState`
(guard_slots_redis.py) shares the same rules across replicas. Both take the time as
an argument, so the rules are pure functions of it (tests run them on a fake clock).
The guard itself (what it refuses, how it says so) is router/addons/upstream_guard/.

The breaker: `closed` counts consecutive failures of the real side; at
`breaker_failures` it opens. Open, every call is refused until `breaker_cooldown_s`
has passed; then it is half-open: one call (the trial) goes through, the others are
refused while it runs. The trial's success closes the breaker; its failure opens it
again for another cool-down. A trial whose replica died frees itself when its lease
ends, as a concurrency slot does.

A call is admitted only if every check passes (breaker, then concurrency, then
budget), and only then does it take a slot and a unit of budget: a refused call
costs nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol


class Refusal(StrEnum):
    BREAKER_OPEN = "breaker_open"  # open, cooling down
    BREAKER_TRIAL = "breaker_trial"  # half-open, its one trial call is in flight
    CONCURRENCY = "concurrency"  # every slot taken
    BUDGET = "budget"  # the token's budget for this window is spent


# How the real side did, as the engine tells every addon: router.engine.real_calls.RealOutcome,
# a StrEnum of these values (this room sits below the engine, so it reads them as strings).
SUCCESS, FAILURE = "success", "failure"


CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"
_SPENT_KEPT = 4096


@dataclass(frozen=True, slots=True)
class Limits:
    """One upstream's limits; `None` (or 0 failures): that check is off."""

    max_concurrent: int | None = None
    budget: int | None = None  # calls per token per window
    budget_window_s: float = 60.0
    breaker_failures: int = 5
    breaker_cooldown_s: float = 30.0


@dataclass(frozen=True, slots=True)
class Verdict:
    admitted: bool
    refusal: Refusal | None = None
    retry_after_s: float = 0.0
    breaker: str = CLOSED  # the breaker's state as this call saw it
    trial: bool = False  # admitted as the half-open breaker's trial call


class GuardState(Protocol):
    shared: bool

    async def acquire(
        self, upstream: str, token: str, limits: Limits, *, slot: str, lease_s: float, now: float
    ) -> Verdict:
        """Admit a call (taking a slot leased for `lease_s` and a unit of budget) or refuse it."""

    async def release(self, upstream: str, limits: Limits, *, slot: str, trial: bool, outcome: str, now: float) -> str:
        """Free the call's slot and tell the breaker how the real side did; the breaker's state after."""


def window_of(now: float, window_s: float) -> tuple[int, float]:
    """(index of the budget window `now` falls in, seconds until it ends)."""
    index = math.floor(now / window_s)
    return index, (index + 1) * window_s - now


@dataclass(slots=True)
class _Breaker:
    failures: int = 0
    opened_at: float | None = None
    trial_until: float = 0.0  # the lease of the trial call in flight (0: none)


@dataclass(slots=True)
class LocalGuardState:
    """The guard's state in this process (the embedded store: one router)."""

    shared: bool = False
    breakers: dict[str, _Breaker] = field(default_factory=dict)
    slots: dict[str, dict[str, float]] = field(default_factory=dict)  # upstream -> slot -> lease end
    # (upstream, token) -> (window, calls, its end)
    spent: dict[tuple[str, str], tuple[int, int, float]] = field(default_factory=dict)

    async def acquire(
        self, upstream: str, token: str, limits: Limits, *, slot: str, lease_s: float, now: float
    ) -> Verdict:
        breaker = self.breakers.get(upstream) or _Breaker()
        state, trial = CLOSED, False
        if limits.breaker_failures > 0 and breaker.opened_at is not None:
            reopens = breaker.opened_at + limits.breaker_cooldown_s
            if now < reopens:
                return Verdict(False, Refusal.BREAKER_OPEN, reopens - now, OPEN)
            if breaker.trial_until > now:
                return Verdict(
                    False, Refusal.BREAKER_TRIAL, min(breaker.trial_until - now, limits.breaker_cooldown_s), HALF_OPEN
                )
            state, trial = HALF_OPEN, True
        held = self.slots.setdefault(upstream, {})  # dropped again when its last call is released
        for expired in [name for name, until in held.items() if until <= now]:  # a lost release frees itself
            del held[expired]
        if limits.max_concurrent is not None and len(held) >= limits.max_concurrent:
            return Verdict(False, Refusal.CONCURRENCY, 1.0, state)
        window, left_s = window_of(now, limits.budget_window_s)
        seen_window, calls, _ = self.spent.get((upstream, token), (window, 0, 0.0))
        calls = calls if seen_window == window else 0
        if limits.budget is not None and calls >= limits.budget:
            return Verdict(False, Refusal.BUDGET, left_s, state)
        if len(self.spent) > _SPENT_KEPT:  # many hosts and tokens: windows already over are forgotten
            self.spent = {key: value for key, value in self.spent.items() if value[2] > now}
        self.spent[(upstream, token)] = (window, calls + 1, now + left_s)
        held[slot] = now + lease_s
        if trial:
            breaker.trial_until = now + lease_s
            self.breakers[upstream] = breaker
        return Verdict(True, None, 0.0, state, trial)

    async def release(self, upstream: str, limits: Limits, *, slot: str, trial: bool, outcome: str, now: float) -> str:
        held = self.slots.get(upstream, {})
        held.pop(slot, None)
        if not held:  # many hosts: only upstreams with calls in flight keep an entry
            self.slots.pop(upstream, None)
        breaker = self.breakers.setdefault(upstream, _Breaker())
        if limits.breaker_failures <= 0:
            del self.breakers[upstream]
            return CLOSED
        if trial:
            breaker.trial_until = 0.0
        if outcome == FAILURE:
            breaker.failures += 1
            if trial or (breaker.opened_at is None and breaker.failures >= limits.breaker_failures):
                breaker.opened_at = now
        elif outcome == SUCCESS:
            if trial:
                breaker.opened_at = None
            if breaker.opened_at is None:  # a late success of a call admitted before it opened does not close it
                breaker.failures = 0
        if breaker == _Breaker():  # closed, no failures: nothing to keep
            del self.breakers[upstream]
        return breaker_state(breaker.opened_at, limits.breaker_cooldown_s, now)


def breaker_state(opened_at: float | None, cooldown_s: float, now: float) -> str:
    if opened_at is None:
        return CLOSED
    return OPEN if now < opened_at + cooldown_s else HALF_OPEN
