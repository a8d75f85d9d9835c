import asyncio

import pytest

from router.engine.sessions import SessionLimitError, SessionRegistry


async def test_cap_idle_close_and_hook():
    closed = []

    async def on_close(session_id):
        closed.append(session_id)

    registry = SessionRegistry(idle_ttl_s=0.1, max_open=2, on_close=on_close)
    registry.get("a")
    registry.get("b")
    with pytest.raises(SessionLimitError, match="2 agent sessions open"):
        registry.get("c")
    await asyncio.sleep(0.15)
    registry.get("b")  # b is active again
    assert await registry.close_idle() == ["a"]
    assert closed == ["a"] and len(registry) == 1
    registry.get("c")
    await registry.aclose()
    assert sorted(closed) == ["a", "b", "c"]
