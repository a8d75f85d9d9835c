"""The Redis store behind the same protocol, against a real redis-server."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from kit.engine import FakeReal, c, check_replay_mapping, make_engine
from kit.launch import records_of, stdio_client, toolbox_server
from kit.redis import RedisServer

from backends.world_model.facts import StatedFacts
from calls import Route, Session
from policies.chain import default_policies
from policies.marks import Diversions
from records.store.redis.store import RedisStore

pytestmark = pytest.mark.integration


def redis_store(server: RedisServer) -> RedisStore:
    return RedisStore(server.url, prefix=f"t{uuid.uuid4().hex[:8]}")


async def test_replay_maps_occurrences_after_mixed_sessions_on_redis(tmp_path, redis_server):
    engine, store = await make_engine(tmp_path, store=redis_store(redis_server))
    await check_replay_mapping(engine)
    aggregates = await store.aggregates()
    assert aggregates["total"] == 11 and aggregates["by_provenance"] == {"real": 4, "replay": 7}
    await store.aclose()


async def test_examples_pending_sessions_recordings_and_orphans_on_redis(tmp_path, redis_server):
    import socket

    from records.owners import owner_is_alive
    from router.engine.replay_modes import ReplayModes

    engine, store = await make_engine(tmp_path, store=redis_store(redis_server), recording="golden")
    real = FakeReal()
    session = Session("a")
    for n in range(5):
        await engine.handle(c("a", n=n), session, real)
    engine.replay_modes = ReplayModes()
    examples = await store.examples(
        "mcp", "srv", "tool", exclude_session="other", call_key=engine.replay.keys(c("a", n=3)).exact, limit=3
    )
    assert [e["arguments"] for e in examples] == [{"n": 3}, {"n": 4}, {"n": 2}]  # the same call first, then the newest
    assert await store.examples("mcp", "srv", "tool", exclude_session="a", call_key=None, limit=3) == []
    history = await store.session_records("a", before_step=3, limit=2)
    assert [r.call.arguments for r in history] == [{"n": 1}, {"n": 2}]
    [golden] = await store.recordings()
    assert (golden.name, golden.sessions, golden.records) == ("golden", 1, 5)
    engine.owner = f"{socket.gethostname()}:999999999:1"
    await engine.write_ahead(await engine.begin(c("b", n=9), Session("b")))
    assert await store.interrupt_orphans(owner_is_alive) == 1
    assert [r["status"] for r in await store.recent(session="b")] == ["interrupted"]
    await store.aclose()


async def test_redis_killed_mid_load_loses_no_record_and_keeps_order(make_config, tmp_path):
    server = RedisServer(tmp_path, persistent=True).start()
    config = make_config(mcpServers={"toolbox": toolbox_server()}, store={"url": server.url})
    try:
        async with stdio_client(config) as client:
            for n in range(10):
                await client.call_tool("echo", {"text": f"n{n}"})
            server.kill()  # Redis goes away mid-load: calls go on, records spool
            for n in range(10, 20):
                result = await client.call_tool("echo", {"text": f"n{n}"})
                assert result.content[0].text == f"n{n}"
            server.start()  # back on the same port: the spool flushes in order
            for _ in range(50):
                await asyncio.sleep(0.2)
                if not (tmp_path / ".simroute" / f"redis-127.0.0.1-{server.port}-0.spool.jsonl").read_text():
                    break
            await client.call_tool("echo", {"text": "after"})
        records = records_of(config)
        texts = [r["arguments"]["text"] for r in records]
        assert texts == [*(f"n{n}" for n in range(20)), "after"]  # every record, in order
        # The steps counted alone while Redis was away are not numbered again once it is back.
        assert [r["step"] for r in records] == list(range(21))
    finally:
        server.kill()


async def test_retention_on_redis(tmp_path, redis_server):
    from kit.engine import check_retention

    engine, store = await make_engine(tmp_path, store=redis_store(redis_server))
    await check_retention(engine, store)
    await store.aclose()


async def test_two_replicas_share_a_sessions_occurrences_history_and_pins(tmp_path, redis_server):
    """Two engines ("replicas") over one Redis, each with its own in-memory session
    object for the same agent session: occurrences and history carry across."""
    from kit.engine import FakeSimulator

    from records.shared_state.session_state_redis import RedisSessionState
    from router.runtime.addon_chain import shared_slices
    from router.runtime.simulated_side import HistoryReadBack

    store = redis_store(redis_server)
    a, _ = await make_engine(tmp_path / "a", store=store)
    b, _ = await make_engine(tmp_path / "b", store=store)
    for engine in (a, b):
        engine.session_state = RedisSessionState(store, ttl_s=600, loaded=shared_slices())
    counter = FakeReal()
    recorded = Session("rec")
    for _ in range(3):
        await a.handle(c("rec", op="next"), recorded, counter)
    for engine in (a, b):
        engine.policies = default_policies(rules=[], mode=Route.REPLAY)
    on_a, on_b = Session("agent"), Session("agent")
    seen = [
        (await a.handle(c("agent", op="next"), on_a, counter)).observation.text,
        (await b.handle(c("agent", op="next"), on_b, counter)).observation.text,  # B knows this is occurrence 2
        (await a.handle(c("agent", op="next"), on_a, counter)).observation.text,
    ]
    assert [text.split(" ")[1] for text in seen] == ["#1", "#2", "#3"]
    simulator = FakeSimulator()
    b.simulator = HistoryReadBack(simulator, store, shared=True)
    b.policies = default_policies(rules=[], mode=Route.SIM)
    await b.handle(c("agent", op="look"), on_b, counter)
    assert simulator.seen_history[-1] == [{"op": "next"}] * 3  # A's turns, as the agent saw them
    assert [r["step"] for r in await store.recent(session="agent")] == [0, 1, 2, 3]

    from calls import Call

    shell = Call("shell", "shell", "shell_exec", {"command": "ls"}, "agent")
    a.simulator = FakeSimulator()
    a.policies = default_policies(rules=[], mode=Route.SIM)
    await a.handle(shell, on_a, counter)  # pins the session's shell to sim
    b.policies = default_policies(rules=[], mode=Route.REAL)
    moved = await b.handle(shell, on_b, counter)
    assert moved.record.decision.route is Route.SIM and moved.record.decision.policy == "sticky"  # the pin travelled
    await store.aclose()


async def test_a_diversion_on_one_replica_keeps_the_servers_reads_simulated_on_another(tmp_path, redis_server):
    """Replica A diverts a destructive MCP call in rehearsal; the session's next read of
    that server, served by replica B (or by a replica started afterwards, with a fresh
    session object), is simulated too: the agent sees the world it changed."""
    from kit.engine import FakeSimulator

    from calls import Call
    from records.shared_state.session_state_redis import RedisSessionState
    from router.config import parse_config
    from router.runtime.addon_chain import shared_slices
    from router.runtime.policy_chain import build_policies

    store = redis_store(redis_server)
    a, _ = await make_engine(tmp_path / "a", store=store)
    b, _ = await make_engine(tmp_path / "b", store=store)
    for engine in (a, b):
        engine.session_state = RedisSessionState(store, ttl_s=600, loaded=shared_slices())
        engine.simulator = FakeSimulator()
        engine.policies = build_policies(parse_config("mode: rehearsal\n"))
    real = FakeReal()
    read = Call("mcp", "notes", "list_notes", {}, "agent")
    on_a, on_b = Session("agent"), Session("agent")
    assert (await b.handle(read, on_b, real)).record.decision.route is Route.REAL
    diverted = await a.handle(Call("mcp", "notes", "delete_note", {"note_id": 1}, "agent"), on_a, real)
    assert (diverted.record.decision.route, diverted.record.decision.policy) == (Route.SIM, "rehearsal")
    assert on_b.slice(Diversions).environments == set() and real.calls == 1  # B has not heard of it in memory
    for session in (on_b, Session("agent")):  # B's own session object; a restarted replica's new one
        after = await b.handle(read, session, real)
        decision = after.record.decision
        assert (decision.route, decision.policy) == (Route.SIM, "rehearsal"), decision.reason
        assert session.slice(Diversions).environments == {("mcp", "notes")}
    assert real.calls == 1
    # Another agent session is not affected.
    other = await b.handle(Call("mcp", "notes", "list_notes", {}, "other"), Session("other"), real)
    assert other.record.decision.route is Route.REAL and real.calls == 2
    await store.aclose()


async def test_noise_table_on_redis(tmp_path, redis_server):
    from kit.engine import check_noise_table

    engine, store = await make_engine(tmp_path, store=redis_store(redis_server))
    await check_noise_table(engine, store)
    await store.aclose()


async def test_writes_between_on_redis(redis_server):
    from kit.engine import check_writes_between

    store = await redis_store(redis_server).open()
    try:
        await check_writes_between(store)
        # The write index is pruned with its records: only the writes still held are left.
        keys = [key async for key in store._client.scan_iter(f"{store.prefix}:writes:*")]
        sizes = {key.split(":", 2)[2]: await store._client.zcard(key) for key in keys}
        assert sizes == {"mcp\x1fother": 1, "mcp\x1flegacy": 1}
    finally:
        await store.aclose()


async def test_sources_round_trip_through_redis_and_an_old_record_reads_back_unchanged(redis_server):
    from kit.records import check_sources_stored

    store = await redis_store(redis_server).open()
    try:
        await check_sources_stored(store)
    finally:
        await store.aclose()


async def test_two_router_processes_share_an_agent_sessions_occurrences(
    make_config, simroute_http, redis_server, tmp_path
):
    """Two `simroute mcp --http` processes on one Redis: an agent session that moves
    between them keeps its replay occurrences (tickets 1, 2, 3 in order)."""
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport
    from kit.launch import meta_of

    tickets = tmp_path / "tickets"
    servers = {"toolbox": toolbox_server(TOOLBOX_TICKETS=str(tickets))}
    recording = simroute_http(make_config(mcpServers=servers, store={"url": redis_server.url}))
    async with Client(recording.url) as client:
        for _ in range(3):
            await client.call_tool("next_ticket", {})
    replaying = make_config(
        mcpServers=servers, store={"url": redis_server.url}, mode="replay", replay={"record_mode": "none"}
    )
    a, b = simroute_http(replaying), simroute_http(replaying)

    def agent(server):
        return Client(StreamableHttpTransport(server.url, headers={"X-Simroute-Session": "agent-7"}))

    seen = []
    async with agent(a) as on_a, agent(b) as on_b:
        for client in (on_a, on_b, on_a):
            result = await client.call_tool("next_ticket", {}, raise_on_error=False)
            seen.append((result.content[0].text, meta_of(result)["provenance"]))
    assert seen == [("ticket 1", "replay"), ("ticket 2", "replay"), ("ticket 3", "replay")]
    assert tickets.read_text() == "3"  # the real ticket system saw only the recording session


async def test_two_router_processes_share_an_agent_sessions_history(make_config, simroute_http, redis_server, tmp_path):
    """Two `simroute mcp --http` processes on one Redis: an agent session's real calls
    through process A are the history in the world-model prompt of its next call,
    simulated by process B, which never served that session before."""
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport
    from kit.launch import meta_of
    from kit.model_stub import ModelStub

    from backends.world_model.mcp_prompt import render_action
    from backends.world_model.prompt import render_observation

    balance = tmp_path / "balance"
    with ModelStub(answer="balance 2182") as model:
        config = make_config(
            mcpServers={"toolbox": toolbox_server(TOOLBOX_BALANCE=str(balance))},
            store={"url": redis_server.url},
            rules=[{"name": "simulate-balance", "match": {"server": "toolbox", "tool": "get_balance"}, "route": "sim"}],
            world_model={"engine": "openai", "url": model.url, "max_tokens": 64, "deadline_s": 30},
        )
        a, b = simroute_http(config), simroute_http(config)

        def agent(server):
            return Client(StreamableHttpTransport(server.url, headers={"X-Simroute-Session": "agent-9"}))

        async with agent(a) as on_a:
            first = await on_a.call_tool("add_funds", {"amount": 137})
            second = await on_a.call_tool("add_funds", {"amount": 2045})
        async with agent(b) as on_b:
            simulated = await on_b.call_tool("get_balance", {})
    seen = [(result.content[0].text, meta_of(result)["provenance"]) for result in (first, second, simulated)]
    assert seen == [("added 137", "real"), ("added 2045", "real"), ("balance 2182", "sim")]
    assert balance.read_text() == "2182"  # the real account saw A's calls, not B's simulated read
    assert model.bodies, "the world model was never asked"
    messages = model.bodies[-1]["messages"]
    # The history section: A's calls as earlier turns, each with the real answer the agent saw.
    assert messages[1:5] == [
        {"role": "user", "content": render_action({"name": "add_funds", "arguments": {"amount": 137}}, 1)},
        {"role": "assistant", "content": render_observation(first.content[0].text)},
        {"role": "user", "content": render_action({"name": "add_funds", "arguments": {"amount": 2045}}, 2)},
        {"role": "assistant", "content": render_observation(second.content[0].text)},
    ]
    assert (
        render_action({"name": "get_balance", "arguments": {}}, 3) in messages[-1]["content"]
    )  # the call itself is turn 3
    mine = [r for r in records_of(config) if r["session"] == "agent-9"]
    assert [(r["step"], r["tool"], r["provenance"], r["policy"]) for r in mine] == [
        (0, "add_funds", "real", "mode"),
        (1, "add_funds", "real", "mode"),
        (2, "get_balance", "sim", "rules:simulate-balance"),
    ]
    assert mine[0]["owner"] == mine[1]["owner"] != mine[2]["owner"]  # steps 0-1 by process A, step 2 by process B


async def test_a_sessions_token_owns_it_on_every_replica(make_config, simroute_http, redis_server):
    """Two `simroute mcp --http` replicas on one Redis, with tokens: the agent session
    a token names is that token's on every replica (its steps continue from replica to
    replica), and another token naming the same session gets a session of its own."""
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    alice, bob = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef01"
    config = make_config(
        mcpServers={"toolbox": toolbox_server()},
        store={"url": redis_server.url},
        service={"tokens": {"alice": alice, "bob": bob}},
    )
    a, b = simroute_http(config), simroute_http(config)

    def agent(server, token: str) -> Client:
        return Client(
            StreamableHttpTransport(
                server.url, headers={"Authorization": f"Bearer {token}", "X-Simroute-Session": "shared"}
            )
        )

    async with agent(a, alice) as alice_on_a, agent(b, alice) as alice_on_b, agent(b, bob) as bob_on_b:
        for client, text in ((alice_on_a, "a1"), (bob_on_b, "b1"), (alice_on_b, "a2"), (alice_on_a, "a3")):
            await client.call_tool("echo", {"text": text})
    steps = {(r["session"], r["arguments"]["text"]): r["step"] for r in records_of(config)}
    assert steps == {
        ("alice/shared", "a1"): 0,
        ("bob/shared", "b1"): 0,
        ("alice/shared", "a2"): 1,
        ("alice/shared", "a3"): 2,
    }


async def test_diff_reads_a_shadowed_record_from_redis(tmp_path, redis_server):
    """`simroute diff RECORD_ID` with `store.url: redis://…`: the record is found by the
    first 12 characters of its id, as `simroute records` lists it."""
    import json
    import os
    import subprocess

    from kit.launch import simroute_executable, write_config

    from calls import Call, Decision, Observation, Provenance, call_key
    from records.record import Record
    from shadow.compare.divergence import compare

    def answer(offset: str, provenance: Provenance) -> Observation:
        body = {"timezone": "Asia/Tokyo", "datetime": f"2026-11-23T19:19:49{offset}"}
        return Observation([{"type": "text", "text": json.dumps(body, indent=2)}], provenance, structured=body)

    config = write_config(tmp_path, store={"url": redis_server.url})
    call = Call("mcp", "time", "get_current_time", {"timezone": "Asia/Tokyo"}, "s1")
    shadowed = Record(
        call,
        Decision(Route.SHADOW, "mode", "test"),
        answer("+09:00", Provenance.REAL),
        step=0,
        call_key=call_key("mcp", "time", "get_current_time", call.arguments),
    )
    shadowed.shadow = answer("+08:00", Provenance.SIM)
    result = compare(shadowed.served, shadowed.shadow, channel="mcp")
    shadowed.divergence, shadowed.divergence_kind, shadowed.divergence_evidence = (
        result.score,
        result.kind,
        result.evidence,
    )
    store = await RedisStore(redis_server.url).open()  # the prefix the config's routers use
    await store.upsert(
        [
            shadowed.to_json(),
            Record(
                call, Decision(Route.REAL, "mode", "test"), answer("+09:00", Provenance.REAL), step=1, call_key="k"
            ).to_json(),
        ]
    )
    await store.aclose()

    def diff(record_id: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [simroute_executable(), "diff", record_id, "--config", str(config)],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "160"},
            timeout=60,
        )

    shown = diff(shadowed.id[:12])
    assert shown.returncode == 0, shown.stderr
    assert "$.result.datetime#offset" in shown.stdout and "+08:00" in shown.stdout and "≠" in shown.stdout
    assert "masked as noise: $.result.datetime#instant" in shown.stdout
    missing = diff("ffff0000")
    assert missing.returncode == 1 and "no record with id ffff0000" in missing.stderr


async def test_facts_stated_on_one_replica_are_told_on_another_within_the_limit(tmp_path, redis_server):
    """Replica A keeps the facts its simulated answer stated; replica B, with its own
    session object, has them from the step it claims; past the limit new facts are
    not kept (the oldest stay), and a fact stated again is updated."""
    from kit.engine import FakeSimulator

    from records.shared_state.session_state_redis import RedisSessionState
    from router.addons.stated_facts import FactKeeper
    from router.runtime.addon_chain import shared_slices

    store = redis_store(redis_server)
    a, _ = await make_engine(tmp_path / "a", store=store, mode=Route.SIM)
    b, _ = await make_engine(tmp_path / "b", store=store, mode=Route.SIM)
    for engine in (a, b):
        engine.session_state = RedisSessionState(store, ttl_s=600, loaded=shared_slices())
        engine.addons.add(FactKeeper(engine.session_state, limit=2))
    on_a, on_b = Session("agent"), Session("agent")
    a.simulator = FakeSimulator('[{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bo"}]')
    await a.handle(c("agent", op="list"), on_a, FakeReal())
    b.simulator = FakeSimulator('{"id": 3, "name": "Cy"}')
    await b.handle(c("agent", op="get"), on_b, FakeReal())
    assert on_b.slice(StatedFacts).facts == {
        "srv id=1": (0, "name=Ada"),
        "srv id=2": (0, "name=Bo"),
    }  # A's facts; Cy: full
    a.simulator = FakeSimulator('{"id": 2, "name": "Bo Lind"}')
    await a.handle(c("agent", op="rename"), on_a, FakeReal())
    await b.handle(c("agent", op="get"), on_b, FakeReal())
    assert on_b.slice(StatedFacts).facts["srv id=2"] == (2, "name=Bo Lind")
    await store.aclose()
