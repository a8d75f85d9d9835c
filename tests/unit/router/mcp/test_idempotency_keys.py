"""A plain MCP session's tools/call answered once by idempotency key, in one router: the
key's answer is kept in a slice of its own, so the session stays a plain session (an
episode lists its tools from the stored snapshot, retries its requests by id, ...),
and the answers end when the session does."""

from __future__ import annotations

from types import SimpleNamespace

from records.shared_state.answers import KeyedAnswers
from records.shared_state.deployment import SharedState
from router.engine.sessions import SessionRegistry
from router.mcp import server
from router.mcp.idempotency_keys import answered_once_by_key
from router.runtime.replica import ReplicaPresence

ACTION = {"tool": "create_ticket", "arguments": {"title": "disk full"}}


async def test_a_plain_session_answered_by_key_stays_plain_and_forgets_its_keys_when_it_closes(monkeypatch):
    sessions = SessionRegistry(idle_ttl_s=60, max_open=8)
    shared_state = SharedState(None, shared=False)  # one router: no Redis
    presence = ReplicaPresence(*shared_state.replicas(lease_s=15, claims_ttl_s=60), identity="here:1:1")
    parts = SimpleNamespace(  # the MCP front door's parts (router/runtime/parts.py) this needs
        keyed_answers=shared_state.answers(ttl_s=86400.0, replica=presence.identity, alive=presence.judge),
        replica=presence,
        sessions=sessions,
    )
    once, runs = answered_once_by_key(parts), []

    async def produce():
        runs.append(1)
        return {"n": len(runs)}

    session = sessions.get("plain")
    assert await once.run(session, "k", ACTION, produce) == {"n": 1}
    assert await once.run(session, "k", ACTION, produce) == {"n": 1} and len(runs) == 1  # the retry: answered once

    assert not session.is_episode and session.find(KeyedAnswers) is not None  # its answers are its own slice
    monkeypatch.setattr(server, "get_context", lambda: None)
    monkeypatch.setattr(server, "agent_session_id", lambda ctx: "plain")
    assert server._serving_an_episode(parts) is False  # its tools are still listed by the upstream, not the snapshot

    await sessions.close("plain")
    reopened = sessions.get("plain")  # a plain session's id opens a fresh session after its close
    assert await once.run(reopened, "k", ACTION, produce) == {"n": 2}
