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
from policies.chain import default_policies
from policies.rules import parse_rule
from router.addons.world_state import WorldStateKeeper
from router.runtime.addon_chain import shared_slices
from router.types import Call, Observation, Provenance, Route, Session
from shadow.store.redis.session_state import RedisSessionState
from shadow.store.redis.store import RedisStore

pytestmark = pytest.mark.integration


def shell(command: str) -> Call:
    return Call("shell", "shell", "shell_exec", {"command": command}, "agent")


def request(method: str, path: str, body=None) -> Call:
    arguments = {"method": method, "url": f"https://api.test{path}", "path": path, "query": {}, "headers": {}, "body": body}
    return Call("http", "api.test", method, arguments, "agent")


async def created(call: Call) -> Observation:
    """The real API's answer to a create: item 7."""
    from backends.http.messages import encode_body, observation_of, response_record

    body = json.dumps({"id": 7, **call.arguments["body"]}).encode()
    return observation_of(
        response_record(201, "", [("Content-Type", "application/json")], encode_body(body, limit=len(body)), decoded=False), Provenance.REAL
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
