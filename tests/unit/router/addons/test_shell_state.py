"""The session's shell state is kept from every route's shell answer: real, replayed
and simulated; perturbed answers and simroute's own say nothing about the shell."""

from __future__ import annotations

from kit.calls import make_call
from kit.engine import make_engine

from backends.shell.screen import ShellResult
from backends.shell.state import ShellState
from calls import Observation, Provenance, Route, Session
from policies.chain import default_policies
from policies.perturbation import PlanConfig, compile_plan
from router.addons.perturbation.addon import Perturber
from router.addons.shell_state import ShellStateKeeper


def shell(command: str):
    return make_call("shell_exec", {"command": command}, channel="shell")


def answer(cwd: str, exit_code: int, provenance: Provenance):
    result = ShellResult(output="", exit_code=exit_code, cwd=cwd)
    return Observation([{"type": "text", "text": result.text()}], provenance, structured=result.structured())


class Shell:
    def __init__(self, cwd: str, exit_code: int = 0, provenance: Provenance = Provenance.REAL) -> None:
        self.cwd, self.exit_code, self.provenance = cwd, exit_code, provenance

    async def __call__(self, call):
        return answer(self.cwd, self.exit_code, self.provenance)

    async def simulate(self, call, session, *, deadline_s, background=False, steer=None):
        return answer(self.cwd, self.exit_code, Provenance.SIM)


async def test_every_route_s_shell_answer_updates_the_shell_state_and_a_perturbed_one_does_not(tmp_path):
    engine, _ = await make_engine(tmp_path)
    engine.addons.add(ShellStateKeeper())
    real = Session("real")
    await engine.handle(shell("cd /srv"), real, Shell("/srv"))
    assert (real.slice(ShellState).cwd, real.slice(ShellState).said_by) == ("/srv", "real")

    engine.policies = default_policies(rules=[], mode=Route.SIM)  # a session's shell stays on the side it started on
    engine.simulator = Shell("/tmp", exit_code=2)
    simulated = Session("simulated")
    await engine.handle(shell("cd /tmp && false"), simulated, Shell("/never"))
    state = simulated.slice(ShellState)
    assert (state.cwd, state.exit_code, state.said_by) == ("/tmp", 2, "sim")

    plan = compile_plan("down", PlanConfig.model_validate({"rules": [{"kind": "error"}]}))
    engine.addons.add(Perturber({"down": plan}, default="down"))
    faulted = await engine.handle(shell("cd /"), simulated, Shell("/"))
    assert faulted.record.perturbation is not None
    assert (state.cwd, state.exit_code, state.said_by) == ("/tmp", 2, "sim")  # a fault ran nowhere

    engine.addons.add(Perturber())
    engine.policies = default_policies(rules=[], mode=Route.DENY)
    denied = Session("denied")
    await engine.handle(shell("cd /root"), denied, Shell("/root"))
    assert denied.find(ShellState) is None  # a denial is simroute's own answer


async def test_other_channels_leave_no_shell_state(tmp_path):
    engine, _ = await make_engine(tmp_path)
    engine.addons.add(ShellStateKeeper())
    session = Session("s")
    await engine.handle(make_call("get_time"), session, Shell("/srv"))
    assert session.find(ShellState) is None
