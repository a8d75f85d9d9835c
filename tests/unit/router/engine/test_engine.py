"""Engine routing with a fake real side and a real SQLite store in a temp dir."""

from kit.engine import FakeReal, FakeSimulator, c, check_replay_mapping, make_engine, with_shadow

from backends.replay import ReplayBackend
from calls import Call, Observation, Provenance, Route, Session
from policies.chain import default_policies
from router.addons.shadow_sampling import ShadowSampling
from router.engine.parts import Deadlines
from router.engine.replay_modes import ReplayModes


async def test_real_route_records_before_returning(tmp_path):
    engine, store = await make_engine(tmp_path)
    session = Session("a")
    outcome = await engine.handle(c("a", x=1), session, FakeReal())
    assert outcome.observation.provenance is Provenance.REAL
    rows = await store.recent()
    assert [r["id"] for r in rows] == [outcome.record.id]
    assert rows[0]["route"] == "real" and rows[0]["step"] == 0 and rows[0]["status"] == "complete"
    assert session.step == 1 and session.history[0].observation is outcome.observation


async def test_replay_nth_occurrence_from_most_recent_session(tmp_path):
    engine, store = await make_engine(tmp_path, on_miss="error")
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


async def test_replay_after_a_mixed_session_maps_occurrences_to_what_was_observed(tmp_path):
    """Session 1 records tickets 1-3; session 2 replays 1-2 and goes real for a 4th
    occurrence; session 3 replays session 2: tickets 1, 2, 3, then session 2's real 4th."""
    engine, _ = await make_engine(tmp_path, mode=Route.REAL)
    await check_replay_mapping(engine)


async def test_an_occurrence_served_by_sim_or_simroute_counts_but_is_a_miss(tmp_path):
    engine, store = await make_engine(tmp_path, on_miss="error")
    real = FakeReal()
    source = Session("src")
    await engine.handle(c("src", q=1), source, real)
    # Occurrence 2 ends in simroute's own deadline error (provenance none)
    engine.deadlines = Deadlines(lambda call: 0.01)
    slow = FakeReal(delay=1)
    timed_out = await engine.handle(c("src", q=1), source, slow)
    assert timed_out.observation.provenance is Provenance.NONE
    engine.deadlines = Deadlines(lambda call: 5)
    await engine.handle(c("src", q=1), source, real)
    engine.policies = default_policies(rules=[], mode=Route.REPLAY)
    replaying = Session("r")
    seen = [(await engine.handle(c("r", q=1), replaying, real)).observation for _ in range(3)]
    assert seen[0].provenance is Provenance.REPLAY and seen[0].text.startswith("real #1")
    assert seen[1].is_error and "answered by none" in seen[1].text  # never replayed as the upstream's answer
    assert seen[2].provenance is Provenance.REPLAY and seen[2].text.startswith("real #2")


async def test_record_modes(tmp_path):
    engine, _ = await make_engine(tmp_path, mode=Route.REPLAY, record_mode="once")
    real = FakeReal()
    fresh = await engine.handle(c("a", q=1), Session("a"), real)  # nothing recorded: recorded now
    assert fresh.observation.provenance is Provenance.REAL
    b = Session("b")
    assert (await engine.handle(c("b", q=1), b, real)).observation.provenance is Provenance.REPLAY
    past_the_recording = await engine.handle(c("b", q=1), b, real)  # a recording exists: stop recording
    assert past_the_recording.observation.is_error and "record_mode is 'once'" in past_the_recording.observation.text
    engine.replay_modes = ReplayModes("all")
    assert (await engine.handle(c("c", q=1), Session("c"), real)).observation.provenance is Provenance.REAL
    engine.replay_modes = ReplayModes("none")
    miss = await engine.handle(c("d", q=2), Session("d"), real)
    assert miss.observation.is_error and real.calls == 2


async def test_named_recordings_are_replayed_by_name(tmp_path):
    engine, store = await make_engine(tmp_path, recording="golden")
    real = FakeReal()
    await engine.handle(c("g", q=1), Session("g"), real)
    engine.replay_modes = ReplayModes()  # later sessions are not part of the recording
    await engine.handle(c("later", q=1), Session("later"), real)
    [golden] = await store.recordings()
    assert (golden.name, golden.sessions, golden.records) == ("golden", 1, 1)
    engine.replay.source = type(engine.replay.source)("golden")
    engine.policies = default_policies(rules=[], mode=Route.REPLAY)
    replayed = await engine.handle(c("r", q=1), Session("r"), real)
    assert replayed.observation.text.startswith("real #1")  # from the recording, not the newer session


async def test_replay_miss_falls_back_as_configured(tmp_path):
    engine, _ = await make_engine(tmp_path, mode=Route.REPLAY, on_miss="real")
    real = FakeReal()
    outcome = await engine.handle(c("a", q=1), Session("a"), real)
    assert outcome.observation.provenance is Provenance.REAL and "served real" in outcome.record.note
    engine.replay_modes = ReplayModes(on_miss="sim")
    simulated = await engine.handle(c("a", q=2), Session("a"), real)
    assert simulated.observation.provenance is Provenance.NONE and "needs a world model" in simulated.observation.text


async def test_ignored_paths_apply_to_old_records(tmp_path):
    engine, store = await make_engine(tmp_path)
    await engine.handle(c("a", q=1, request_id="r-1"), Session("a"), FakeReal())
    engine.replay = ReplayBackend(store, ignore_arguments=["request_id"])
    assert await store.rekey(engine.replay.scheme, engine.replay.replay_key_of_row) == 1
    engine.policies = default_policies(rules=[], mode=Route.REPLAY)
    outcome = await engine.handle(c("b", q=1, request_id="r-2"), Session("b"), FakeReal())
    assert outcome.observation.provenance is Provenance.REPLAY


async def test_deadline_turns_into_error_observation_of_simroute(tmp_path):
    engine, store = await make_engine(tmp_path, deadline=0.05)
    outcome = await engine.handle(c("a"), Session("a"), FakeReal(delay=5))
    assert outcome.observation.is_error and "0.05s deadline" in outcome.observation.text
    [row] = await store.recent()
    assert row["observation"]["is_error"] is True and row["provenance"] == "none"


async def test_deny_and_rule_decisions_are_recorded(tmp_path):
    engine, store = await make_engine(
        tmp_path, rules=[{"match": {"arguments": {"rm": True}}, "route": "deny", "reason": "destructive"}]
    )
    real = FakeReal()
    outcome = await engine.handle(c("a", rm=True), Session("a"), real)
    assert outcome.observation.is_error and "destructive" in outcome.observation.text and real.calls == 0
    assert (await store.recent())[0]["policy"] == "rules:rule[0]"


async def test_a_call_with_side_effects_is_on_record_before_it_runs(tmp_path):
    engine, store = await make_engine(tmp_path)
    seen_while_running = []

    async def real(call):
        seen_while_running.extend(await store.recent())
        return Observation([{"type": "text", "text": "done"}], Provenance.REAL)

    outcome = await engine.handle(c("a", n=1), Session("a"), real)
    [ahead] = seen_while_running
    assert ahead["id"] == outcome.record.id and ahead["status"] == "started" and ahead["owner"] == engine.owner
    assert [r["status"] for r in await store.recent()] == ["complete"]
    seen_while_running.clear()
    await engine.handle(c("a", n=2), Session("a"), real, read_only=True)
    assert [r["status"] for r in seen_while_running] == ["complete"]  # the earlier record only: no write-ahead


async def test_started_records_of_a_dead_owner_become_interrupted(tmp_path):
    import socket

    from records.owners import owner_is_alive, this_process_owner

    engine, store = await make_engine(tmp_path)
    gone, alive = f"{socket.gethostname()}:999999999:1", this_process_owner()
    for owner in (gone, alive):
        engine.owner = owner
        pending = await engine.begin(c("a", owner=owner), Session("a"))
        await engine.write_ahead(pending)  # then the router "dies": no completion
    assert await store.interrupt_orphans(owner_is_alive) == 1
    statuses = {r["owner"]: (r["status"], r["note"]) for r in await store.recent()}
    assert statuses[alive][0] == "started"
    assert statuses[gone][0] == "interrupted" and "interrupted" in statuses[gone][1]


async def test_backend_exceptions_are_recorded_as_simroutes_errors(tmp_path):
    engine, store = await make_engine(tmp_path, mode=Route.SIM)

    class Exploding:
        async def simulate(self, call, session, *, deadline_s, background=False, steer=None):
            raise RuntimeError("the simulator broke")

    engine.simulator = Exploding()
    outcome = await engine.handle(c("a"), Session("a"), FakeReal())
    assert outcome.observation.provenance is Provenance.NONE and "the simulator broke" in outcome.observation.text

    async def raising_real(call):
        raise OSError("socket gone")

    engine.policies = default_policies(rules=[], mode=Route.REAL)
    failed = await engine.handle(c("a", n=2), Session("a"), raising_real)
    assert failed.observation.is_error and "socket gone" in failed.observation.text
    assert [r["provenance"] for r in await store.recent()] == ["none", "none"]


async def test_shadow_serves_real_then_completes_the_record_off_path(tmp_path):
    engine, store = await make_engine(tmp_path, mode=Route.SHADOW)
    simulator = FakeSimulator(delay=0.05)
    runner = with_shadow(engine, store, simulator)
    session = Session("a")
    await engine.handle(c("a", n=0), session, FakeReal())
    outcome = await engine.handle(c("a", n=1), session, FakeReal())
    assert outcome.observation.provenance is Provenance.REAL
    assert (await store.recent())[-1]["status"] == "pending"  # durable before the agent sees the result
    await runner.wait(5)
    row = (await store.recent())[-1]
    assert row["status"] == "complete" and row["shadow"]["provenance"] == "sim"
    assert 0 < row["divergence"] <= 1
    assert row["divergence_kind"] in ("structure", "format", "content", "status")
    assert row["divergence_evidence"]["divergent"], row["divergence_evidence"]
    assert simulator.seen_history[-1] == [{"n": 0}]  # the history before the shadowed call


async def test_shadow_rate_samples_real_calls(tmp_path):
    import random

    engine, store = await make_engine(tmp_path)
    runner = with_shadow(engine, store, FakeSimulator(), rate=0.5)
    engine.addons.find(ShadowSampling).rng = random.Random(7)
    session = Session("a")
    for n in range(40):
        await engine.handle(c("a", n=n), session, FakeReal())
    await runner.wait(5)
    shadowed = [r for r in await store.recent() if r["shadow"]]
    assert 10 < len(shadowed) < 30
    assert all("sampled for shadow" in r["note"] and r["route"] == "real" for r in shadowed)


async def test_drain_completes_pending_records_after_a_stop_and_goes_past_a_bad_one(tmp_path):
    engine, store = await make_engine(tmp_path, mode=Route.SHADOW)
    runner = with_shadow(engine, store, FakeSimulator(delay=10))
    session = Session("a")
    await engine.handle(c("a", n=0), session, FakeReal())
    await engine.handle(c("a", n=1), session, FakeReal())
    await runner.aclose(grace_s=0.01)  # stopped with work in flight
    assert [r["status"] for r in await store.recent()] == ["pending", "pending"]
    broken = dict((await store.recent())[0], observation=None)  # a pending record that cannot be read back
    await store.upsert([broken])

    from shadow.runner import ShadowRunner

    report = await ShadowRunner(
        simulator=FakeSimulator(), store=store, records=engine.records, deadline_for=lambda call: 5
    ).drain()
    assert report.completed == 1 and len(report.failed) == 1 and broken["id"] in report.failed[0]
    assert [r["status"] for r in await store.recent()] == ["pending", "complete"]


def test_ignored_argument_paths_reach_into_lists():
    replay = ReplayBackend(store=None, ignore_arguments=["items.*.id"])  # type: ignore[arg-type]
    first = Call("mcp", "s", "t", {"items": [{"id": 1, "name": "a"}]}, "x")
    second = Call("mcp", "s", "t", {"items": [{"id": 2, "name": "a"}]}, "x")
    other = Call("mcp", "s", "t", {"items": [{"id": 2, "name": "b"}]}, "x")
    assert replay.keys(first).replay == replay.keys(second).replay != replay.keys(other).replay
    assert replay.keys(first).exact != replay.keys(second).exact  # the record keeps the whole call


async def test_shadow_work_is_bounded_and_a_full_queue_skips_it_on_record(tmp_path):
    engine, store = await make_engine(tmp_path, mode=Route.SHADOW)
    runner = with_shadow(engine, store, FakeSimulator(delay=0.3), rate=1.0, queue_size=1, concurrency=1)
    session = Session("a")
    for n in range(3):  # one running, one queued, the third finds the queue full
        served = await engine.handle(c("a", n=n), session, FakeReal())
        assert served.observation.provenance is Provenance.REAL  # the agent never waits for shadow work
    engine.policies = default_policies(rules=[], mode=Route.REAL)
    await engine.handle(c("a", n=3), session, FakeReal())  # a shadow.rate sample, skipped too
    statuses = [(r["status"], r["note"]) for r in await store.recent()]
    assert [s for s, _ in statuses] == ["pending", "pending", "skipped", "complete"]
    assert "shadow queue is full" in statuses[2][1] and "sample skipped" in statuses[3][1]
    assert runner.skipped == 2
    await runner.wait(5)
    assert [r["status"] for r in await store.recent()] == ["complete", "complete", "skipped", "complete"]
    assert [r["id"] for r in await store.pending()] == []  # drain never retries a skipped record


async def test_a_sessions_shadow_work_runs_in_order_with_its_history(tmp_path):
    engine, store = await make_engine(tmp_path, mode=Route.SHADOW)
    simulator = FakeSimulator(delay=0.01)
    runner = with_shadow(engine, store, simulator, concurrency=3)
    session = Session("a")
    for n in range(5):
        await engine.handle(c("a", n=n), session, FakeReal())
    await runner.wait(5)
    assert simulator.seen_history == [[{"n": k} for k in range(n)] for n in range(5)]


async def test_a_body_recorded_truncated_is_a_miss_never_replayed_as_complete(tmp_path):
    engine, store = await make_engine(tmp_path, on_miss="error")

    async def big_answer(call):
        return Observation(
            [{"type": "text", "text": 'HTTP/1.1 200 OK\n\n{"items": [...'}],
            Provenance.REAL,
            structured={
                "status": 200,
                "reason": "OK",
                "headers": [],
                "body": '{"items": [...',
                "body_size": 5_000_000,
                "truncated": True,
            },
        )

    await engine.handle(c("a", page=1), Session("a"), big_answer)
    engine.policies = default_policies(rules=[], mode=Route.REPLAY)
    replayed = await engine.handle(c("b", page=1), Session("b"), big_answer)
    assert replayed.observation.is_error and "recorded truncated" in replayed.observation.text


def test_prompt_fitting_measures_each_turn_once():
    from backends.world_model.prompt import omit_oldest

    counted = []

    def count(text):
        counted.append(text)
        return len(text) // 4

    turns = 400
    messages, omitted = omit_oldest(
        "system",
        turns,
        lambda i, n: (f"action {i} " * 20, f"observation {i} " * 40),
        lambda n: "now",
        budget_tokens=2000,
        count_tokens=count,
    )
    assert 0 < omitted < turns and sum(len(m["content"]) // 4 + 8 for m in messages) <= 2000 * 1.1
    assert len(counted) < 6 * turns  # linear: not once per dropped turn over the whole history


async def test_a_rules_shadow_rate_and_deadline_win_over_the_configured_ones(tmp_path):
    rules = [
        {"match": {"arguments": {"slow": True}}, "route": "real", "deadline_s": 0.05},
        {"match": {"arguments": {"watch": True}}, "route": "real", "shadow_rate": 1.0},
    ]
    engine, store = await make_engine(tmp_path, rules=rules, deadline=5.0)
    runner = with_shadow(engine, store, FakeSimulator(), rate=0.0)
    slow = await engine.handle(c("a", slow=True), Session("a"), FakeReal(delay=2))
    assert slow.observation.is_error and "0.05s deadline" in slow.observation.text
    watched = await engine.handle(c("a", watch=True), Session("a"), FakeReal())
    plain = await engine.handle(c("a", plain=True), Session("a"), FakeReal())
    await runner.wait(5)
    assert "shadow rate 1" in watched.record.note and plain.record.note == ""
    shadowed = [r["arguments"] for r in await store.recent() if r["shadow"]]
    assert shadowed == [{"watch": True}]


async def test_a_replay_backend_or_store_that_raises_still_leaves_a_record(tmp_path):
    import sqlite3

    from records.store.protocol import StoreError

    engine, store = await make_engine(tmp_path, mode=Route.REPLAY, record_mode="none")
    real = FakeReal()

    async def lookup_raises(*args, **kwargs):
        raise RuntimeError("replay index corrupt")

    engine.replay.lookup = lookup_raises  # the replay backend itself raises
    first = await engine.handle(c("a", q=1), Session("a"), real)

    async def replay_session_raises(*args, **kwargs):
        raise StoreError("the record store cannot be read: disk I/O error")

    store.replay_session = replay_session_raises  # the real SQLite store's replay lookup raises
    engine.replay = ReplayBackend(store)
    second = await engine.handle(c("b", q=2), Session("b"), real)

    assert real.calls == 0  # neither went real unasked
    assert (
        first.observation.is_error
        and "the replay route failed: RuntimeError: replay index corrupt" in first.observation.text
    )
    assert second.observation.is_error and "StoreError" in second.observation.text
    rows = await store.recent()
    assert [(r["id"], r["session"], r["route"], r["provenance"], r["status"]) for r in rows] == [
        (first.record.id, "a", "replay", "none", "complete"),
        (second.record.id, "b", "replay", "none", "complete"),
    ]
    assert "replay index corrupt" in rows[0]["observation"]["content"][0]["text"]
    on_disk = sqlite3.connect(tmp_path / "r.db").execute("SELECT id FROM records ORDER BY ts").fetchall()
    assert [i for (i,) in on_disk] == [first.record.id, second.record.id]


async def test_history_beyond_the_memory_bound_is_read_back_from_the_store_for_the_simulator(tmp_path):
    from calls import HISTORY_IN_MEMORY
    from router.runtime.simulated_side import HistoryReadBack

    engine, store = await make_engine(tmp_path, mode=Route.SIM)
    simulator = FakeSimulator()
    engine.simulator = HistoryReadBack(simulator, store)
    session = Session("long")
    calls = HISTORY_IN_MEMORY + 44
    for n in range(calls):
        await engine.handle(c("long", n=n), session, FakeReal())
        assert len(session.history) <= HISTORY_IN_MEMORY  # memory stays bounded
    assert session.forgotten > 0 and session.history[0].call.arguments != {"n": 0}  # older turns left memory
    # Every prompt still saw the whole history: the dropped turns were read back, in order.
    assert simulator.seen_history[-1] == [{"n": n} for n in range(calls - 1)]
    assert all(seen == [{"n": n} for n in range(i)] for i, seen in enumerate(simulator.seen_history))
