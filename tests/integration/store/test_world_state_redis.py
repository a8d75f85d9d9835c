"""Two replicas sharing Redis continue one session's world state: a file written through
one (really, or simulated) is read from state on the other, and so is a JSON API's
resource created through one, with no model call."""

from __future__ import annotations

import json
import uuid

import pytest
from kit.redis import RedisServer
from kit.shell_world import StandInSandbox

from backends.shell.screen import ShellResult
from backends.world_state.simulation import StatefulSimulator
from calls import Call, Observation, Provenance, Route, Session
from policies.chain import default_policies
from policies.rules import parse_rule
from records.shared_state.session_state_redis import RedisSessionState
from records.store.redis.store import RedisStore
from router.addons.world_state import WorldStateKeeper
from router.runtime.addon_chain import shared_slices

pytestmark = pytest.mark.integration


def shell(command: str) -> Call:
    return Call("shell", "shell", "shell_exec", {"command": command}, "agent")


def request(method: str, path: str, body=None) -> Call:
    arguments = {
        "method": method,
        "url": f"https://api.test{path}",
        "path": path,
        "query": {},
        "headers": {},
        "body": body,
    }
    return Call("http", "api.test", method, arguments, "agent")


async def created(call: Call) -> Observation:
    """The real API's answer to a create: item 7."""
    from backends.http.messages import encode_body, observation_of, response_record

    body = json.dumps({"id": 7, **call.arguments["body"]}).encode()
    return observation_of(
        response_record(
            201, "", [("Content-Type", "application/json")], encode_body(body, limit=len(body)), decoded=False
        ),
        Provenance.REAL,
    )


class NoModel:
    calls = 0

    async def simulate(self, call, session, *, deadline_s, background=False, steer=None):
        NoModel.calls += 1
        return Observation.error("no model here", Provenance.SIM)


async def test_two_replicas_continue_one_sessions_world_state(tmp_path, redis_server: RedisServer):
    from kit.engine import make_engine

    store = RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}")
    written_real = parse_rule({"match": {"arguments": {"command": "echo one*"}}, "route": "real"})
    posted_real = parse_rule({"match": {"channel": "http", "method": "POST"}, "route": "real"})
    replicas = []
    for name in ("a", "b"):
        engine, _ = await make_engine(tmp_path / name, store=store)
        engine.session_state = RedisSessionState(store, ttl_s=600, loaded=shared_slices())
        engine.policies = default_policies(rules=[written_real, posted_real], mode=Route.SIM)
        engine.simulator = StatefulSimulator(NoModel())
        engine.addons.add(WorldStateKeeper())
        replicas.append(engine)
    a, b = replicas
    on_a, on_b, sandbox = Session("agent"), Session("agent"), StandInSandbox()  # each replica its own session object
    await a.handle(shell("echo one > log.txt"), on_a, sandbox)  # real, on A
    await b.handle(shell("mkdir -p out && cp log.txt out/copy.txt"), on_b, sandbox)  # simulated on B, from A's state
    await a.handle(shell("echo two >> out/copy.txt"), on_a, sandbox)  # simulated on A, on B's state
    answer = (await b.handle(shell("cat out/copy.txt"), on_b, sandbox)).observation
    assert ShellResult.from_structured(answer.structured).output == "one\ntwo\n" and answer.source.sub == "state"
    await a.handle(request("POST", "/items", {"name": "kept"}), on_a, created)  # real, on A
    read = (await b.handle(request("GET", "/items/7"), on_b, created)).observation  # simulated on B, from A's state
    assert json.loads(read.structured["body"]) == {"id": 7, "name": "kept"} and read.source.sub == "state"
    assert NoModel.calls == 0
    await store.aclose()


async def test_a_replica_reads_the_shared_world_only_when_another_one_saved_it(tmp_path, redis_server: RedisServer):
    """The world (up to 256 KB) is not read from Redis on every call: only when the
    session's last save came from another replica (the version loaded with the claim)."""
    from kit.engine import make_engine

    store = RedisStore(redis_server.url, prefix=f"t{uuid.uuid4().hex[:8]}")
    replicas, reads = [], {"a": 0, "b": 0}
    for name in ("a", "b"):
        engine, _ = await make_engine(tmp_path / name, store=store)
        state = engine.session_state = RedisSessionState(store, ttl_s=600, loaded=shared_slices())
        engine.policies = default_policies(rules=[], mode=Route.SIM)
        engine.simulator = StatefulSimulator(NoModel())
        engine.addons.add(WorldStateKeeper())

        def counting(read, name=name):
            async def counted(*args, **kwargs):
                reads[name] += 1
                return await read(*args, **kwargs)

            return counted

        state.read = counting(state.read)  # type: ignore[method-assign]
        replicas.append(engine)
    a, b = replicas
    on_a, on_b, sandbox = Session("agent"), Session("agent"), StandInSandbox()
    for command in ("echo one > f", "echo two >> f", "cat f"):
        await a.handle(shell(command), on_a, sandbox)
    assert reads == {"a": 0, "b": 0}  # one replica alone: its own copy is the newest
    answer = (await b.handle(shell("cat f"), on_b, sandbox)).observation
    assert ShellResult.from_structured(answer.structured).output == "one\ntwo\n" and reads == {"a": 0, "b": 1}
    await b.handle(shell("echo three >> f"), on_b, sandbox)
    answer = (await a.handle(shell("cat f"), on_a, sandbox)).observation
    assert ShellResult.from_structured(answer.structured).output == "one\ntwo\nthree\n" and reads == {"a": 1, "b": 1}
    await store.aclose()
