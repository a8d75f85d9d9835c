"""`simroute explain --session`: the session's world state rebuilt from its records (a
real write, a simulated one, a state answer), and what it answers a shell call."""

from __future__ import annotations

import asyncio
import json

from kit.engine import make_engine
from kit.shell_world import StandInSandbox
from typer.testing import CliRunner

from backends.shell.screen import ShellResult
from backends.world_state.shell import run
from backends.world_state.simulation import StatefulSimulator
from calls import Call, Observation, Provenance, Route, Session
from policies.chain import default_policies
from policies.rules import parse_rule
from router.addons.world_state import WorldStateKeeper
from router.cli.main import app


class Model:
    async def simulate(self, call, session, *, deadline_s, background=False, steer=None):
        result = ShellResult("invented words\n", 0, "/workspace")
        return Observation([{"type": "text", "text": result.text()}], Provenance.SIM, structured=result.structured())


async def test_explain_rebuilds_a_sessions_world_state_from_its_records(tmp_path):
    engine, store = await make_engine(tmp_path, store=None)
    engine.simulator = StatefulSimulator(Model())
    engine.addons.add(WorldStateKeeper())
    real = [parse_rule({"match": {"arguments": {"command": pattern}}, "route": "real"}) for pattern in ("echo *", "ls")]
    engine.policies = default_policies(rules=real, mode=Route.SIM)
    session, sandbox = Session("agent"), StandInSandbox()
    run(sandbox.world, "echo secret plan > plan.txt")
    for command in ("echo one > a.txt", "ls", "cat plan.txt", "cp a.txt b.txt"):
        await engine.handle(Call("shell", "shell", "shell_exec", {"command": command}, "agent"), session, sandbox)
    await engine.records.aclose()
    await store.aclose()
    config = tmp_path / "simroute.yaml"
    config.write_text(json.dumps({"store": {"path": str(tmp_path / "r.db")}, "shell": {"enabled": True}}))
    call = {"channel": "shell", "name": "shell_exec", "arguments": {"command": "cat b.txt plan.txt"}}
    arguments = ["explain", "--config", str(config), "--call", json.dumps(call), "--session", "agent"]
    out = await asyncio.to_thread(CliRunner().invoke, app, arguments)  # the command runs its own event loop
    assert out.exit_code == 0, out.output
    world = json.loads(out.output)["world_state"]
    files = world["shell"]["files"]
    assert files["/workspace/a.txt"] == files["/workspace/b.txt"] == {"bytes": 4}
    assert files["/workspace/plan.txt"] == {"bytes": 15, "invented": True}  # the model's text, marked
    assert world["sim_answer"] == {
        "sub": "state",
        "output": "one\ninvented words\n",
        "exit_code": 0,
        "cwd": "/workspace",
    }
