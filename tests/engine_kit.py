"""A small kit for engine tests: a real SQLite store in a temp folder, a fake real
side and a fake simulator (unit tests of routing logic)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from backends.replay import ReplayBackend
from policies import default_policies, parse_rule
from router.engine import Engine
from router.replay_modes import ReplayModes
from router.types import Call, Observation, Provenance, Route
from shadow.record_log import RecordLog
from shadow.sqlite_store import SQLiteStore


class FakeReal:
    def __init__(self, delay: float = 0.0) -> None:
        self.calls = 0
        self.delay = delay

    async def __call__(self, call: Call) -> Observation:
        self.calls += 1
        await asyncio.sleep(self.delay)
        return Observation([{"type": "text", "text": f"real #{self.calls} {call.arguments}"}], Provenance.REAL, latency_s=0.001)


class FakeSimulator:
    def __init__(self, text: str = "sim says hi", delay: float = 0.0) -> None:
        self.text, self.delay, self.seen_history = text, delay, []

    async def simulate(self, call, session, *, deadline_s, background=False):
        self.seen_history.append([t.call.arguments for t in session.history])
        await asyncio.sleep(self.delay)
        return Observation([{"type": "text", "text": self.text}], Provenance.SIM, latency_s=self.delay)


async def make_engine(
    tmp_path: Path, *, mode=Route.REAL, rules=(), on_miss=None, record_mode="new_episodes", ignore=(), deadline=5.0, recording=None, source=None,
    store=None,
) -> tuple[Engine, SQLiteStore]:
    """An engine over `store` (default: a SQLite store in `tmp_path`), opened."""
    from shadow.store import ReplaySource

    store = await (store or SQLiteStore(tmp_path / "r.db")).open()
    records = await RecordLog(store, tmp_path / "r.spool.jsonl").start()
    engine = Engine(
        policies=default_policies(rules=[parse_rule(r) for r in rules], mode=mode),
        records=records,
        replay=ReplayBackend(store, ignore_arguments=ignore, source=ReplaySource(source)),
        replay_modes=ReplayModes(record_mode, on_miss, recording),
        deadline_for=lambda call: deadline,
    )
    return engine, store


def with_shadow(engine: Engine, store: SQLiteStore, simulator, rate: float = 0.0, **runner_options):
    from shadow.runner import ShadowRunner

    engine.simulator = simulator
    engine.shadow = ShadowRunner(simulator=simulator, store=store, records=engine.records, deadline_for=lambda call: 5.0, **runner_options)
    engine.shadow_rate = rate
    return engine.shadow


def c(session: str, **arguments) -> Call:
    return Call("mcp", "srv", "tool", arguments, session)


async def check_retention(engine: Engine, store) -> None:
    """Shared by the SQLite and Redis tests: prune keeps named recordings and
    unfinished records, and a pruned replay source is a miss."""
    from router.types import Session

    real = FakeReal()
    await engine.handle(c("old", q=1), Session("old"), real)
    engine.replay_modes = ReplayModes(recording="keep")
    await engine.handle(c("kept", q=2), Session("kept"), real)
    engine.replay_modes = ReplayModes()
    pending = await engine.begin(c("running", q=3), Session("running"))
    await engine.write_ahead(pending)  # started: never pruned
    import time

    assert await store.prune(before_ts=time.time() + 1) == 1
    assert sorted(r["session"] for r in await store.recent()) == ["kept", "running"]
    engine.policies = default_policies(rules=[], mode=Route.REPLAY)
    engine.replay_modes = ReplayModes("none")
    miss = await engine.handle(c("later", q=1), Session("later"), real)
    assert miss.observation.is_error and "replay miss" in miss.observation.text


async def check_noise_table(engine: Engine, store) -> None:
    """Shared by the SQLite and Redis tests: repeated real calls teach the store's noise
    table passively, and the shadow comparison then masks what always differs."""
    from router.types import Session
    from shadow.canonical import tool_key
    from shadow.noise import NoiseRule, noise_for_tool
    from shadow.noise_learner import NoiseLearner

    engine.noise_learner = learner = NoiseLearner(store)

    async def clock(call):
        clock.n += 1
        return Observation([], Provenance.REAL, structured={"zone": "UTC", "ticks": clock.n * 7919})

    clock.n = 0
    for n in range(4):
        await engine.handle(c(f"s{n}", q="now"), Session(f"s{n}"), clock, read_only=True)
    await learner.wait(5)
    [(key, name, stats)] = await store.noise_table()
    assert (key, name, stats.pairs) == (tool_key("mcp", "srv", "tool"), "srv.tool", 3)
    assert stats.disagreements == {"$.result.ticks": 3}
    noise = await noise_for_tool(store, key, rule=NoiseRule(builtin_detectors=False))
    assert noise.paths == frozenset({"$.result.ticks"})
    await learner.aclose()


async def check_replay_mapping(engine: Engine) -> FakeReal:
    """Shared by the SQLite and Redis tests. Session 1 records tickets 1-3; session 2
    replays 1-3 and goes real for a 4th occurrence; session 3 replays session 2:
    tickets 1, 2, 3, then session 2's real 4th."""
    from router.types import Session

    counter = FakeReal()
    first = Session("s1")
    for _ in range(3):
        await engine.handle(c("s1", op="next"), first, counter)
    engine.policies = default_policies(rules=[], mode=Route.REPLAY)
    second = Session("s2")
    seen2 = [(await engine.handle(c("s2", op="next"), second, counter)).observation for _ in range(4)]
    assert [o.provenance for o in seen2] == [Provenance.REPLAY] * 3 + [Provenance.REAL]
    third = Session("s3")
    seen3 = [(await engine.handle(c("s3", op="next"), third, counter)).observation for _ in range(4)]
    assert [o.text.split(" ")[1] for o in seen3] == ["#1", "#2", "#3", "#4"]
    assert [o.provenance for o in seen3] == [Provenance.REPLAY] * 4
    assert counter.calls == 4
    return counter
