"""Shadow work on a shell line the session's world state answers compares the real
answer with the state's (sub-provenance `state`, no model call), made on a copy of the
state as it stood before the call; a line the state leaves to the model is simulated
off the path as before (sub `model`)."""

from __future__ import annotations

from kit.engine import make_engine
from kit.shell_world import StandInSandbox

from backends.world_state.shell import run
from backends.world_state.simulation import StatefulSimulator
from calls import Call, Observation, Provenance, Route, Session, Source
from router.addons.shadow_sampling import ShadowSampling
from router.addons.world_state import WorldStateKeeper
from router.runtime.state_shadow import state_answer
from shadow.runner import ShadowRunner


class CountingModel:
    def __init__(self) -> None:
        self.calls = 0

    async def simulate(self, call, session, *, deadline_s, background=False, steer=None):
        self.calls += 1
        guess = Observation([{"type": "text", "text": "the model's guess"}], Provenance.SIM)
        guess.source = Source(sub="model")  # as WorldModelSimulator marks what the model wrote
        return guess


async def test_shadow_pairs_of_a_shell_session_carry_how_the_sim_route_would_have_answered(tmp_path):
    engine, store = await make_engine(tmp_path, mode=Route.SHADOW)
    model = CountingModel()
    engine.simulator = StatefulSimulator(model)  # names its answers' sub, as the runtime's does
    engine.addons.add(WorldStateKeeper())
    runner = ShadowRunner(
        simulator=engine.simulator, store=store, records=engine.records, deadline_for=lambda call: 5.0
    )
    engine.addons.add(
        ShadowSampling(
            runner, state_answer=state_answer(lambda channel, server: True, screen_lines=200, screen_chars=16000)
        )
    )
    session, sandbox = Session("s"), StandInSandbox()
    run(sandbox.world, "echo 'the real report' > report.txt")  # only the real side holds it
    lines = ("echo alpha > notes.txt", "echo beta >> notes.txt", "cat notes.txt", "ls", "cat report.txt")
    try:
        for line in lines:
            await engine.handle(Call("shell", "shell", "shell_exec", {"command": line}, "s"), session, sandbox)
        await runner.wait(5.0)
        rows = {row["arguments"]["command"]: row for row in await store.recent()}
        subs = {line: rows[line]["shadow"]["source"]["sub"] for line in lines}
        assert subs == {line: "state" for line in lines[:4]} | {"cat report.txt": "model"}
        assert model.calls == 1  # the state's answers cost no model call
        # The shadow's own run left the session's state alone: the append was applied once.
        assert (
            rows["cat notes.txt"]["shadow"]["structured"]["output"] == "alpha\nbeta\n"
            and rows["cat notes.txt"]["divergence"] == 0
        )
        assert rows["ls"]["divergence"] > 0  # the state did not know report.txt: its listing diverged
        assert all(row["status"] == "complete" for row in rows.values())
    finally:
        await runner.aclose()
        await engine.records.aclose()
        await store.aclose()
