"""Steps answered once by idempotency key, in one router (kept in the episode's session)."""

from __future__ import annotations

import pytest
from kit.calls import with_slices

from calls import EpisodeSetup, Session
from records.shared_state.answers import IdempotencyError, LocalAnswers
from router.mcp.idempotency_keys import AnsweredOnce


async def test_one_router_answers_a_retried_key_once_and_refuses_it_for_another_action():
    episode = with_slices(Session("episode-x"), EpisodeSetup())
    once, runs = AnsweredOnce(LocalAnswers()), []

    async def produce():
        runs.append(1)
        return {"n": len(runs)}

    action = {"type": "call_tool", "tool_name": "echo", "arguments": {"text": "a"}}
    assert await once.run(episode, "k", action, produce) == {"n": 1}
    assert await once.run(episode, "k", action, produce) == {"n": 1} and len(runs) == 1
    with pytest.raises(IdempotencyError, match="another action"):
        await once.run(episode, "k", {**action, "arguments": {"text": "b"}}, produce)
    with pytest.raises(IdempotencyError, match="printable"):
        await once.run(episode, "", action, produce)
    assert await once.run(episode, "k2", action, produce) == {"n": 2}
