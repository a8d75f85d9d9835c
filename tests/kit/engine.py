"""A small kit for engine tests: a real SQLite store in a temp folder, a fake real
side and a fake simulator (unit tests of routing logic)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from backends.replay import ReplayBackend
from calls import Call, Observation, Provenance, Route
from kit.calls import make_call
from policies.chain import default_policies
from policies.rules import parse_rule
from records.store.record_log import RecordLog
from records.store.sqlite.store import SQLiteStore
from router.engine.engine import Engine
from router.engine.parts import Deadlines
from router.engine.replay_modes import ReplayModes


class FakeReal:
    def __init__(self, delay: float = 0.0) -> None:
        self.calls = 0
        self.delay = delay

    async def __call__(self, call: Call) -> Observation:
        self.calls += 1
        await asyncio.sleep(self.delay)
        return Observation(
            [{"type": "text", "text": f"real #{self.calls} {call.arguments}"}], Provenance.REAL, latency_s=0.001
        )


class FakeSimulator:
    def __init__(self, text: str = "sim says hi", delay: float = 0.0) -> None:
        self.text, self.delay, self.seen_history = text, delay, []

    async def simulate(self, call, session, *, deadline_s, background=False, steer=None):
        self.seen_history.append([t.call.arguments for t in session.history])
        await asyncio.sleep(self.delay)
        return Observation([{"type": "text", "text": self.text}], Provenance.SIM, latency_s=self.delay)


async def make_engine(
    tmp_path: Path,
    *,
    mode=Route.REAL,
    rules=(),
    on_miss=None,
    record_mode="new_episodes",
    ignore=(),
    deadline=5.0,
    recording=None,
    source=None,
    store=None,
) -> tuple[Engine, SQLiteStore]:
    """An engine over `store` (default: a SQLite store in `tmp_path`), opened."""
    from records.store.protocol import ReplaySource

    store = await (store or SQLiteStore(tmp_path / "r.db")).open()
    records = await RecordLog(store, tmp_path / "r.spool.jsonl").start()
    from router.addons.perturbation.addon import Perturber
    from router.addons.policy_marks import PolicyMarks
    from router.runtime.addon_chain import policy_after_calls

    engine = Engine(
        policies=default_policies(rules=[parse_rule(r) for r in rules], mode=mode),
        records=records,
        replay=ReplayBackend(store, ignore_arguments=ignore, source=ReplaySource(source)),
        replay_modes=ReplayModes(record_mode, on_miss, recording),
        # What every runtime's engine has (an episode's own perturbation plan, the policies' marks).
        addons=[Perturber(), PolicyMarks(policy_after_calls())],
        deadlines=Deadlines(lambda call: deadline),
    )
    return engine, store


def with_shadow(engine: Engine, store: SQLiteStore, simulator, rate: float = 0.0, **runner_options):
    """The engine's simulator and shadow work (run in the process); returns the runner."""
    from router.addons.shadow_sampling import ShadowSampling
    from shadow.runner import ShadowRunner

    engine.simulator = simulator
    runner = ShadowRunner(
        simulator=simulator, store=store, records=engine.records, deadline_for=lambda call: 5.0, **runner_options
    )
    engine.addons.add(ShadowSampling(runner, rate=rate))
    return runner


def use_virtual(engine: Engine, virtual) -> None:
    """The engine's virtual servers: their decisions rewritten, their replays from their recordings."""
    from dataclasses import replace

    from router.addons.virtual_servers import VirtualServerRoutes

    engine.addons.add(VirtualServerRoutes(virtual))
    engine.replay_modes = replace(engine.replay_modes, virtual=virtual)


def c(session: str, **arguments) -> Call:
    """The engine tests' call: the same tool, told apart by session and arguments."""
    return make_call(arguments=arguments, session=session)


async def check_retention(engine: Engine, store) -> None:
    """Shared by the SQLite and Redis tests: prune keeps named recordings and
    unfinished records, and a pruned replay source is a miss."""
    from calls import Session

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
    from calls import Session, tool_key
    from records.store.noise_counts import NoiseRule
    from router.addons.noise import NoiseWatch
    from shadow.compare.noise import noise_for_tool
    from shadow.noise_learner import NoiseLearner

    learner = NoiseLearner(store)
    engine.addons.add(NoiseWatch(learner))

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
    from calls import Session

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


async def check_writes_between(store) -> None:
    """Shared by the SQLite and Redis tests: `writes_between` finds the calls that may
    have written to a server whose span meets the window, whoever recorded them; reads,
    simulated calls, other servers and channels do not count; a call still `started`
    spans everything after its start; pruned records are forgotten."""
    from dataclasses import replace

    from calls import Decision
    from records.record import Record

    def record(
        tool,
        ts,
        *,
        server="notes",
        channel="mcp",
        route=Route.REAL,
        provenance=Provenance.REAL,
        reads_only=False,
        ended=None,
        status="complete",
        safety=None,
    ) -> Record:
        call = Call(channel, server, tool, {}, "other-replica")
        served = Observation([{"type": "text", "text": "ok"}], provenance)
        return Record(
            call,
            Decision(route, "mode", "test", safety=safety),
            served,
            step=0,
            call_key=f"k-{tool}",
            ts=ts,
            status=status,
            reads_only=reads_only,
            ended=ts + 1 if ended is None and status != "started" else ended,
        )

    create = record("create_note", 100.0)  # wrote somewhere in [100, 101]
    started = record("delete_note", 200.0, server="other", provenance=Provenance.NONE, status="started")
    rows = [
        create,
        started,
        record("list_notes", 102.0, reads_only=True),
        record("create_note", 110.0, route=Route.SIM, provenance=Provenance.SIM),  # never reached the server
        record("create_note", 120.0, channel="http"),  # another channel's server of that name
    ]
    legacy = [
        r.to_json()
        for r in (record("put", 300.0, server="legacy"), record("get", 310.0, server="legacy", safety="safe"))
    ]
    for row in legacy:  # written before records said whether they read only and when they ended
        del row["reads_only"], row["ended"]
    await store.upsert([r.to_json() for r in rows] + legacy)

    async def wrote(server, since, until, channel="mcp") -> bool:
        return await store.writes_between(channel, server, since=since, until=until)

    assert (
        await wrote("notes", 99.0, 100.5) and await wrote("notes", 100.2, 100.8) and await wrote("notes", 100.9, 130.0)
    )
    assert not await wrote("notes", 95.0, 99.9)  # before it started
    assert not await wrote("notes", 101.5, 130.0)  # after it ended: a read, a simulated write, another channel's
    assert await wrote("notes", 119.5, 120.5, channel="http")
    assert await wrote("other", 1000.0, 1001.0)  # still started: it may write at any moment
    assert not await wrote("other", 150.0, 199.0)
    await store.upsert([replace(started, status="complete", ended=201.0).to_json()])
    assert not await wrote("other", 1000.0, 1001.0) and await wrote("other", 200.5, 300.0)
    assert await wrote("legacy", 299.0, 300.5) and not await wrote(
        "legacy", 300.5, 400.0
    )  # not `safe`: a write, at its start
    assert not await wrote("notes", 0.0, 0.5) and not await wrote("nowhere", 0.0, 1e12)

    assert await store.prune(before_ts=150.0) == 4
    assert not await wrote("notes", 99.0, 130.0) and not await wrote("notes", 119.5, 120.5, channel="http")
