"""Engine routing with a fake real side and a real SQLite store in a temp dir."""

import asyncio


from backends.replay import ReplayBackend
from policies import default_policies, parse_rule
from router.engine import Engine
from router.types import Call, Observation, Provenance, Route, Session
from shadow.spool import SpoolingWriter
from shadow.sqlite_store import SQLiteStore, StoreError


class FakeReal:
    def __init__(self, delay=0.0):
        self.calls = 0
        self.delay = delay

    async def __call__(self, call):
        self.calls += 1
        await asyncio.sleep(self.delay)
        return Observation([{"type": "text", "text": f"real #{self.calls} {call.arguments}"}], Provenance.REAL, latency_s=0.001)


def make_engine(tmp_path, *, mode=Route.REAL, rules=(), on_miss="real", ignore=(), deadline=5.0):
    store = SQLiteStore(tmp_path / "r.db").open()
    engine = Engine(
        policies=default_policies(rules=[parse_rule(r) for r in rules], mode=mode),
        records=SpoolingWriter(store, tmp_path / "r.spool.jsonl", errors=(StoreError,)),
        replay=ReplayBackend(store, ignore_arguments=ignore),
        replay_on_miss=on_miss,
        deadline_for=lambda call: deadline,
    )
    return engine, store


def c(session, **arguments):
    return Call("mcp", "srv", "tool", arguments, session)


async def test_real_route_records_before_returning(tmp_path):
    engine, store = make_engine(tmp_path)
    session = Session("a")
    outcome = await engine.handle(c("a", x=1), session, FakeReal())
    assert outcome.observation.provenance is Provenance.REAL
    rows = store.recent()
    assert [r["id"] for r in rows] == [outcome.record.id]
    assert rows[0]["route"] == "real" and rows[0]["step"] == 0
    assert session.step == 1 and session.history[0].observation is outcome.observation


async def test_replay_nth_occurrence_from_most_recent_session(tmp_path):
    engine, store = make_engine(tmp_path, on_miss="error")
    real = FakeReal()
    for session_id in ("old", "recent"):
        session = Session(session_id)
        for _ in range(2):
            await engine.handle(c(session_id, q="x"), session, real)
    engine.policies = default_policies(rules=[], mode=Route.REPLAY)
    session = Session("now")
    texts = [(await engine.handle(c("now", q="x"), session, real)).observation for _ in range(3)]
    assert [o.provenance for o in texts[:2]] == [Provenance.REPLAY, Provenance.REPLAY]
    assert [o.text for o in texts[:2]] == ["real #3 {'q': 'x'}", "real #4 {'q': 'x'}"]  # from session "recent"
    assert texts[2].is_error and "occurrence 3" in texts[2].text
    assert real.calls == 4


async def test_replay_miss_falls_back_as_configured(tmp_path):
    engine, _ = make_engine(tmp_path, mode=Route.REPLAY, on_miss="real")
    real = FakeReal()
    outcome = await engine.handle(c("a", q=1), Session("a"), real)
    assert outcome.observation.provenance is Provenance.REAL and "served real" in outcome.record.note
    engine.replay_on_miss = "sim"
    simulated = await engine.handle(c("a", q=2), Session("a"), real)
    assert simulated.observation.provenance is Provenance.SIM and simulated.observation.is_error


async def test_ignored_paths_apply_to_old_records(tmp_path):
    engine, store = make_engine(tmp_path)
    await engine.handle(c("a", q=1, request_id="r-1"), Session("a"), FakeReal())
    engine.replay = ReplayBackend(store, ignore_arguments=["request_id"])
    engine.policies = default_policies(rules=[], mode=Route.REPLAY)
    outcome = await engine.handle(c("b", q=1, request_id="r-2"), Session("b"), FakeReal())
    assert outcome.observation.provenance is Provenance.REPLAY


async def test_deadline_turns_into_error_observation(tmp_path):
    engine, store = make_engine(tmp_path, deadline=0.05)
    outcome = await engine.handle(c("a"), Session("a"), FakeReal(delay=5))
    assert outcome.observation.is_error and "0.05s deadline" in outcome.observation.text
    assert store.recent()[0]["observation"]["is_error"] is True


async def test_deny_and_rule_decisions_are_recorded(tmp_path):
    engine, store = make_engine(tmp_path, rules=[{"match": {"arguments": {"rm": True}}, "route": "deny", "reason": "destructive"}])
    real = FakeReal()
    outcome = await engine.handle(c("a", rm=True), Session("a"), real)
    assert outcome.observation.is_error and "destructive" in outcome.observation.text and real.calls == 0
    assert store.recent()[0]["policy"] == "rules:rule[0]"


async def test_store_failure_spools_and_flushes(tmp_path):
    engine, store = make_engine(tmp_path)
    store.close()
    store.path = tmp_path / "missing-dir" / "sub" / "r.db"
    (tmp_path / "missing-dir").write_text("a file where a folder should be")
    await engine.handle(c("a", n=1), Session("a"), FakeReal())
    spool = tmp_path / "r.spool.jsonl"
    assert len(spool.read_text().splitlines()) == 1
    store.path = tmp_path / "r.db"
    store._db = None
    await engine.handle(c("a", n=2), Session("a"), FakeReal())
    assert not spool.exists()
    assert [r["arguments"]["n"] for r in store.recent()] == [1, 2]


class FakeSimulator:
    def __init__(self, text="sim says hi", delay=0.0):
        self.text, self.delay, self.seen_history = text, delay, []

    async def simulate(self, call, session, *, deadline_s, background=False):
        self.seen_history.append([t.call.arguments for t in session.history])
        await asyncio.sleep(self.delay)
        return Observation([{"type": "text", "text": self.text}], Provenance.SIM, latency_s=self.delay)


def with_shadow(engine, store, simulator, rate=0.0):
    from shadow.runner import ShadowRunner

    engine.simulator = simulator
    engine.shadow = ShadowRunner(simulator=simulator, store=store, deadline_for=lambda call: 5.0)
    engine.shadow_rate = rate
    return engine.shadow


async def test_shadow_serves_real_then_completes_the_record_off_path(tmp_path):
    engine, store = make_engine(tmp_path, mode=Route.SHADOW)
    simulator = FakeSimulator(delay=0.05)
    runner = with_shadow(engine, store, simulator)
    session = Session("a")
    await engine.handle(c("a", n=0), session, FakeReal())
    outcome = await engine.handle(c("a", n=1), session, FakeReal())
    assert outcome.observation.provenance is Provenance.REAL
    assert store.recent()[-1]["status"] == "pending"  # durable before the agent sees the result
    await runner.wait(5)
    row = store.recent()[-1]
    assert row["status"] == "complete" and row["shadow"]["provenance"] == "sim"
    assert 0 < row["divergence"] <= 1
    assert simulator.seen_history[-1] == [{"n": 0}]  # the history before the shadowed call


async def test_shadow_rate_samples_real_calls(tmp_path):
    import random

    engine, store = make_engine(tmp_path)
    runner = with_shadow(engine, store, FakeSimulator(), rate=0.5)
    engine.rng = random.Random(7)
    session = Session("a")
    for n in range(40):
        await engine.handle(c("a", n=n), session, FakeReal())
    await runner.wait(5)
    shadowed = [r for r in store.recent() if r["shadow"]]
    assert 10 < len(shadowed) < 30
    assert all("sampled for shadow" in r["note"] and r["route"] == "real" for r in shadowed)


async def test_drain_completes_pending_records_after_a_stop(tmp_path):
    engine, store = make_engine(tmp_path, mode=Route.SHADOW)
    runner = with_shadow(engine, store, FakeSimulator(delay=10))
    session = Session("a")
    await engine.handle(c("a", n=0), session, FakeReal())
    await runner.aclose(grace_s=0.01)  # stopped with work in flight
    assert [r["status"] for r in store.recent()] == ["pending"]

    from shadow.runner import ShadowRunner

    simulator = FakeSimulator()
    drained = await ShadowRunner(simulator=simulator, store=store, deadline_for=lambda call: 5).drain()
    assert drained == 1
    assert [r["status"] for r in store.recent()] == ["complete"]


def test_ignored_argument_paths_reach_into_lists():
    replay = ReplayBackend(source=None, ignore_arguments=["items.*.id"])  # type: ignore[arg-type]
    first = Call("mcp", "s", "t", {"items": [{"id": 1, "name": "a"}]}, "x")
    second = Call("mcp", "s", "t", {"items": [{"id": 2, "name": "a"}]}, "x")
    other = Call("mcp", "s", "t", {"items": [{"id": 2, "name": "b"}]}, "x")
    assert replay.key(first) == replay.key(second) != replay.key(other)
    assert replay.exact_key(first) != replay.exact_key(second)  # the record keeps the whole call
