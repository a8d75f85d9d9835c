"""The upstream guard's rules in the process (the embedded store), on a fake clock.
The same scenarios run on a real Redis in tests/integration/store/test_guard_redis.py."""

from __future__ import annotations

import pytest
from kit.guard import SCENARIOS

from records.shared_state.guard_slots import LocalGuardState


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
async def test_local_guard_state(scenario):
    await scenario(LocalGuardState())


async def test_the_process_keeps_no_entry_for_upstreams_at_rest():
    """An agent may reach thousands of HTTP hosts: a host with no call in flight and a
    closed breaker without failures leaves nothing behind."""
    from records.shared_state.guard_slots import Limits
    from router.addons.upstream_guard.state import Outcome

    state = LocalGuardState()
    for i in range(100):
        verdict = await state.acquire(f"host-{i}", "", Limits(), slot="s", lease_s=10, now=0.0)
        await state.release(f"host-{i}", Limits(), slot="s", trial=verdict.trial, outcome=Outcome.SUCCESS, now=1.0)
    assert state.breakers == {} and state.slots == {}
