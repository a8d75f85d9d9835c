"""The engine never sends a virtual server's call real: with no recording the world
model answers; backed by a recording, recorded calls replay in order and a miss is
simulated and flagged (provenance sim, a note), never passed off as recorded."""

from kit.engine import FakeReal, FakeSimulator, c, make_engine, use_virtual

from calls import Provenance, Route, Session
from policies.virtual import VirtualServers
from router.engine.replay_modes import ReplayModes


async def test_an_unbacked_virtual_server_is_simulated_on_the_real_route(tmp_path):
    engine, store = await make_engine(tmp_path, mode=Route.REAL)
    engine.simulator = FakeSimulator("sim forecast")
    use_virtual(engine, VirtualServers({"srv": None}))
    real = FakeReal()
    outcome = await engine.handle(c("a", city="Lima"), Session("a"), real)
    assert real.calls == 0
    assert outcome.observation.provenance is Provenance.SIM and outcome.observation.text == "sim forecast"
    row = (await store.recent())[0]
    assert (row["route"], row["policy"], row["provenance"]) == ("sim", "virtual", "sim")


async def test_a_recording_backed_virtual_server_replays_in_order_and_simulates_a_miss(tmp_path):
    engine, store = await make_engine(tmp_path, mode=Route.REAL, recording="golden")
    real = FakeReal()
    recorded = Session("rec")
    for _ in range(2):  # two answers of the same call, in order
        await engine.handle(c("rec", q="x"), recorded, real)
    # Sends the replay route real, except a virtual server's (below)
    engine.replay_modes = ReplayModes(record_mode="all")
    await engine.handle(c("newer", q="x"), Session("newer"), real)  # a newer session outside the recording
    assert real.calls == 3

    engine.simulator = FakeSimulator("sim answer")
    use_virtual(engine, VirtualServers({"srv": "golden"}))
    session = Session("v")
    seen = [(await engine.handle(c("v", q="x"), session, real)).observation for _ in range(3)]
    assert real.calls == 3  # nothing reached the real side
    assert [(o.provenance, o.text) for o in seen] == [
        (Provenance.REPLAY, "real #1 {'q': 'x'}"),
        (Provenance.REPLAY, "real #2 {'q': 'x'}"),
        (Provenance.SIM, "sim answer"),
    ]
    rows = [r for r in await store.recent() if r["session"] == "v"]
    assert [r["route"] for r in rows] == ["replay"] * 3
    assert "replay miss (occurrence 3" in rows[2]["note"] and "virtual server 'srv': served sim" in rows[2]["note"]


async def test_an_unrecorded_call_of_a_backed_server_is_simulated_even_when_replay_misses_go_real(tmp_path):
    engine, _ = await make_engine(tmp_path, mode=Route.REPLAY, on_miss="real")
    engine.simulator = FakeSimulator()
    use_virtual(engine, VirtualServers({"srv": "golden"}))
    real = FakeReal()
    outcome = await engine.handle(c("a", q="never recorded"), Session("a"), real)
    assert real.calls == 0 and outcome.observation.provenance is Provenance.SIM
