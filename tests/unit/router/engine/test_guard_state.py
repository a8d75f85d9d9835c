"""The upstream guard's rules in the process (the embedded store), on a fake clock.
The same scenarios run on a real Redis in tests/integration/store/test_guard_redis.py."""

from __future__ import annotations

import pytest
from kit.guard import SCENARIOS

from router.engine.guard_state import LocalGuardState


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
async def test_local_guard_state(scenario):
    await scenario(LocalGuardState())
