"""The engine's steps for front doors whose real side arrives later (the HTTP proxy)."""

import asyncio

from kit.engine import FakeReal, FakeSimulator, c, make_engine, with_shadow

from calls import Observation, Provenance, Route, Session
from policies.chain import default_policies


def real_observation(text="real"):
    return Observation([{"type": "text", "text": text}], Provenance.REAL)


async def test_real_route_needs_the_real_side_and_is_recorded_on_complete(tmp_path):
    engine, store = await make_engine(tmp_path)
    session = Session("a")
    pending = await engine.begin(c("a", x=1), session, read_only=True)
    assert await engine.serve(pending) is None and pending.needs_real
    assert await store.recent() == []
    outcome = await engine.complete(pending, real_observation())
    assert (await store.recent())[0]["id"] == outcome.record.id and session.step == 1


async def test_replay_miss_going_real_keeps_its_note_and_hits_need_nothing(tmp_path):
    engine, store = await make_engine(tmp_path, mode=Route.REPLAY, on_miss="real")
    pending = await engine.begin(c("a", q=1), Session("a"))
    assert await engine.serve(pending) is None
    await engine.complete(pending, real_observation("first"))
    assert "served real" in (await store.recent())[0]["note"]
    hit = await engine.begin(c("b", q=1), Session("b"))
    observation = await engine.serve(hit)
    assert observation.provenance is Provenance.REPLAY and observation.text == "first" and not hit.needs_real


async def test_shadow_submitted_on_complete_and_cancel_records(tmp_path):
    engine, store = await make_engine(tmp_path, mode=Route.SHADOW)
    runner = with_shadow(engine, store, FakeSimulator())
    pending = await engine.begin(c("a", n=1), Session("a"))
    assert await engine.serve(pending) is None
    await engine.complete(pending, real_observation())
    await runner.wait(5)
    rows = await store.recent()
    assert rows[0]["status"] == "complete" and rows[0]["shadow"]["provenance"] == "sim"
    engine.policies = default_policies(rules=[], mode=Route.REAL)
    gone = await engine.begin(c("a", n=2), Session("a"))
    await engine.cancel(gone, "client went away")
    last = (await store.recent())[-1]
    assert last["note"] == "cancelled" and "client went away" in last["observation"]["content"][0]["text"]
    assert FakeReal().calls == 0


async def test_a_front_door_that_sends_a_call_itself_gets_the_engines_probe_decision(tmp_path):
    """The HTTP proxy makes its probes itself (engine.probe): only real calls known
    read-only are probed, at the rate, and a probe past the call's deadline fails."""
    from router.addons.noise import NoiseWatch
    from shadow.noise_learner import NoiseLearner

    engine, store = await make_engine(tmp_path, deadline=0.2)
    noise = NoiseWatch(NoiseLearner(store, probe_delay_s=0), probe_rate=1.0)
    engine.addons.add(noise)
    sent = []

    async def hangs():
        sent.append(1)
        await asyncio.sleep(30)

    async def done(pending):
        assert await engine.serve(pending) is None
        return (await engine.complete(pending, real_observation())).record

    session = Session("a")
    read = await engine.begin(c("a", x=1), session, read_only=True)
    assert engine.probe(read, await done(read), hangs)
    write = await engine.begin(c("a", x=2), session)  # not known read-only
    assert not engine.probe(write, await done(write), hangs)
    noise.probe_rate = 0.0
    again = await engine.begin(c("a", x=3), session, read_only=True)
    assert not engine.probe(again, await done(again), hangs)
    await noise.learner.wait(5)
    assert sent == [1] and (noise.learner.probes_failed, noise.learner.probed) == (1, 0)
    assert session.step == 3 and len(await store.recent()) == 3  # probes are neither steps nor records
    await noise.aclose()
