"""The upstream guard's rules as scenarios on a fake clock, run against each state
implementation: `LocalGuardState` in the unit tests, `RedisGuardState` on a real
redis-server in the integration tests (the same rules, in Lua)."""

from __future__ import annotations

import uuid

from records.shared_state.guard_slots import Limits, Refusal
from router.addons.upstream_guard.state import Outcome

T0 = 1_800_000_000.0  # a fake clock's start (seconds since the epoch)
BREAKER = Limits(breaker_failures=3, breaker_cooldown_s=30.0)


def unique(name: str) -> str:
    """An upstream name of its own: scenarios sharing one Redis never meet."""
    return f"{name}-{uuid.uuid4().hex[:8]}"


async def call(
    state, upstream: str, limits: Limits, outcome: Outcome | None, *, now: float, token: str = "", lease_s: float = 60.0
):
    """Acquire, then (if admitted and `outcome` given) release with it; the verdict."""
    slot = uuid.uuid4().hex
    verdict = await state.acquire(upstream, token, limits, slot=slot, lease_s=lease_s, now=now)
    if verdict.admitted and outcome is not None:
        await state.release(upstream, limits, slot=slot, trial=verdict.trial, outcome=outcome, now=now)
    return verdict


async def breaker_opens_refuses_then_a_trial_closes_it(state) -> None:
    up = unique("flaky")
    for i in range(3):
        assert (await call(state, up, BREAKER, Outcome.FAILURE, now=T0 + i)).admitted
    refused = await call(state, up, BREAKER, Outcome.SUCCESS, now=T0 + 12)
    assert (refused.admitted, refused.refusal, refused.breaker) == (False, Refusal.BREAKER_OPEN, "open")
    assert abs(refused.retry_after_s - 20.0) < 1e-6  # opened at T0+2, cool-down 30 s
    # Past the cool-down: one trial goes through; while it runs, others are refused.
    slot = uuid.uuid4().hex
    trial = await state.acquire(up, "", BREAKER, slot=slot, lease_s=60.0, now=T0 + 33)
    assert (trial.admitted, trial.trial, trial.breaker) == (True, True, "half_open")
    waiting = await call(state, up, BREAKER, None, now=T0 + 34)
    assert (waiting.admitted, waiting.refusal) == (False, Refusal.BREAKER_TRIAL)
    assert await state.release(up, BREAKER, slot=slot, trial=True, outcome=Outcome.SUCCESS, now=T0 + 35) == "closed"
    after = await call(state, up, BREAKER, Outcome.SUCCESS, now=T0 + 36)
    assert (after.admitted, after.trial, after.breaker) == (True, False, "closed")


async def a_failed_trial_opens_it_for_another_cool_down(state) -> None:
    up = unique("down")
    for _ in range(3):
        await call(state, up, BREAKER, Outcome.FAILURE, now=T0)
    trial = await call(state, up, BREAKER, Outcome.FAILURE, now=T0 + 31)
    assert trial.admitted and trial.trial
    again = await call(state, up, BREAKER, None, now=T0 + 40)
    assert (again.refusal, round(again.retry_after_s)) == (Refusal.BREAKER_OPEN, 21)  # re-opened at T0+31


async def only_consecutive_failures_count(state) -> None:
    up = unique("mostly-up")
    for outcome in [Outcome.FAILURE] * 2 + [Outcome.SUCCESS] + [Outcome.FAILURE] * 2 + [Outcome.NEUTRAL] * 3:
        assert (await call(state, up, BREAKER, outcome, now=T0)).admitted
    assert (
        await call(state, up, BREAKER, None, now=T0)
    ).admitted  # 2 in a row since the success; neutral ones say nothing
    off = Limits(breaker_failures=0)
    up_off = unique("unguarded")
    for _ in range(10):
        assert (await call(state, up_off, off, Outcome.FAILURE, now=T0)).admitted


async def a_dead_replicas_trial_frees_itself(state) -> None:
    up = unique("orphan")
    for _ in range(3):
        await call(state, up, BREAKER, Outcome.FAILURE, now=T0)
    orphan = await call(state, up, BREAKER, None, now=T0 + 31, lease_s=5.0)  # admitted, never released
    assert orphan.trial
    assert (await call(state, up, BREAKER, None, now=T0 + 35)).refusal is Refusal.BREAKER_TRIAL
    assert (await call(state, up, BREAKER, None, now=T0 + 37)).trial  # its lease ended at T0+36


async def concurrency_is_capped_by_leased_slots(state) -> None:
    up, capped = unique("narrow"), Limits(max_concurrent=2)
    held = [await call(state, up, capped, None, now=T0, lease_s=10.0) for _ in range(2)]
    assert all(v.admitted for v in held)
    third = await call(state, up, capped, None, now=T0 + 1)
    assert (third.admitted, third.refusal) == (False, Refusal.CONCURRENCY)
    slot = uuid.uuid4().hex
    assert not (await state.acquire(up, "", capped, slot=slot, lease_s=10.0, now=T0 + 2)).admitted
    # The two slots were never released (their replica died): they free themselves when their lease ends.
    assert (await call(state, up, capped, Outcome.SUCCESS, now=T0 + 10.5)).admitted


async def budgets_are_per_token_and_window(state) -> None:
    up, limited = unique("metered"), Limits(budget=3, budget_window_s=10.0)
    start = T0 - T0 % 10  # the start of a window
    for _ in range(3):
        assert (await call(state, up, limited, Outcome.SUCCESS, now=start + 1, token="alice")).admitted
    spent = await call(state, up, limited, Outcome.SUCCESS, now=start + 4, token="alice")
    assert (spent.admitted, spent.refusal, round(spent.retry_after_s)) == (False, Refusal.BUDGET, 6)
    assert (await call(state, up, limited, Outcome.SUCCESS, now=start + 4, token="bob")).admitted
    assert (await call(state, up, limited, Outcome.SUCCESS, now=start + 10, token="alice")).admitted  # a new window


async def a_refused_call_costs_no_budget(state) -> None:
    up, limits = unique("both"), Limits(max_concurrent=1, budget=2, budget_window_s=1000.0)
    start = T0 - T0 % 1000
    slot = uuid.uuid4().hex
    assert (await state.acquire(up, "", limits, slot=slot, lease_s=60.0, now=start)).admitted
    for _ in range(5):  # refused by the cap: no budget spent
        assert (await call(state, up, limits, None, now=start + 1)).refusal is Refusal.CONCURRENCY
    await state.release(up, limits, slot=slot, trial=False, outcome=Outcome.SUCCESS, now=start + 2)
    assert (await call(state, up, limits, Outcome.SUCCESS, now=start + 3)).admitted  # the budget's second call
    assert (await call(state, up, limits, Outcome.SUCCESS, now=start + 4)).refusal is Refusal.BUDGET


SCENARIOS = [
    breaker_opens_refuses_then_a_trial_closes_it,
    a_failed_trial_opens_it_for_another_cool_down,
    only_consecutive_failures_count,
    a_dead_replicas_trial_frees_itself,
    concurrency_is_capped_by_leased_slots,
    budgets_are_per_token_and_window,
    a_refused_call_costs_no_budget,
]
