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


async def test_an_explicit_session_has_its_own_ttl_and_is_never_reopened_once_ended():
    from calls import Session
    from router.engine.sessions import SessionEndedError

    reasons = []

    async def closed(session_id, reason):
        reasons.append((session_id, reason))

    registry = SessionRegistry(idle_ttl_s=60, max_open=3)
    registry.closed_listeners.append(closed)
    registry.open(Session(id="episode-1", idle_ttl_s=0.05))
    registry.get("agent")  # an implicit session keeps the registry's TTL
    with pytest.raises(ValueError):
        registry.open(Session(id="episode-1"))
    await asyncio.sleep(0.1)
    assert await registry.close_idle() == ["episode-1"]
    assert reasons == [("episode-1", "reaped")] and registry.ended("episode-1") == "reaped"
    with pytest.raises(SessionEndedError, match="has ended"):
        registry.get("episode-1")  # a late call is refused, not served by a fresh session
    await registry.close("agent")
    assert registry.ended("agent") is None and registry.get("agent") is not None  # implicit sessions reopen
    await registry.aclose()


async def test_a_session_busy_with_a_long_call_is_not_idle():
    from calls import Session

    registry = SessionRegistry(idle_ttl_s=60, max_open=3)
    busy = registry.open(Session(id="episode-busy", idle_ttl_s=0.05))
    busy.in_flight = 1  # a call longer than the TTL is running
    await asyncio.sleep(0.1)
    assert await registry.close_idle() == []
    busy.in_flight = 0  # it answered; nothing since
    assert await registry.close_idle() == ["episode-busy"]
    await registry.aclose()
