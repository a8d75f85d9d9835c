"""The noise model: paths that real-vs-real pairs disagree at are learned as noise."""

import json
import math

import pytest

from calls import Call, Decision, Observation, Provenance, Route, call_key, tool_key
from records.record import Record
from records.store.noise_counts import NoiseRule, wilson_lower_bound
from shadow.compare.divergence import compare
from shadow.compare.noise import MemoryNoiseStore, NoiseModel, noise_for_tool, pair_disagreements
from shadow.noise_learner import NoiseLearner


def answer(body, provenance=Provenance.REAL):
    return Observation([{"type": "text", "text": json.dumps(body)}], provenance, structured=body)


def test_wilson_lower_bound_rule():
    rule = NoiseRule()  # >= 3 pairs, lower bound (z=1) >= 0.5
    assert rule.is_noisy(3, 3) and rule.is_noisy(4, 5)
    assert not rule.is_noisy(2, 2)  # too few pairs
    assert not rule.is_noisy(2, 3) and not rule.is_noisy(6, 10)  # a rate this low is not sure enough
    assert NoiseRule(z=0).is_noisy(2, 4)  # z = 0: the plain rate
    assert wilson_lower_bound(0, 0, 1.0) == 0.0
    assert wilson_lower_bound(50, 100, 1.96) == pytest.approx(0.404, abs=0.001)


def test_learned_path_masks_only_that_path():
    model = NoiseModel(rule=NoiseRule(builtin_detectors=False))
    key = tool_key("mcp", "quotes", "get_quote")
    for price in (101.5, 101.7, 101.2, 101.9):
        model.observe(
            key,
            answer({"symbol": "ACME", "price": 101.0, "seq": 1}),
            answer({"symbol": "ACME", "price": price, "seq": 1}),
            channel="mcp",
        )
    noise = model.noise_for(key)
    assert noise.paths == {"$.result.price"}
    sim = answer({"symbol": "ACME", "price": 99.0, "seq": 1}, Provenance.SIM)
    result = compare(answer({"symbol": "ACME", "price": 101.0, "seq": 1}), sim, channel="mcp", noise=noise)
    assert (result.score, result.kind, result.evidence["masked"]) == (0.0, "none", ["$.result.price"])
    wrong_symbol = answer({"symbol": "ACNE", "price": 99.0, "seq": 1}, Provenance.SIM)
    other = compare(answer({"symbol": "ACME", "price": 101.0, "seq": 1}), wrong_symbol, channel="mcp", noise=noise)
    assert other.kind == "content" and [d["path"] for d in other.evidence["divergent"]] == ["$.result.symbol"]


def test_list_elements_share_a_noisy_path():
    first = answer({"items": [{"id": 1, "seen": 5}, {"id": 2, "seen": 9}]})
    second = answer({"items": [{"id": 1, "seen": 6}, {"id": 2, "seen": 3}]})
    assert pair_disagreements(first, second, channel="mcp") == {"$.result.items[*].seen"}


async def test_store_protocol_in_memory():
    store = MemoryNoiseStore()
    key = tool_key("mcp", "s", "t")
    for _ in range(3):
        await store.add_noise_observation(key, {"$.result.x"})
    await store.add_noise_observation(key, set())
    noise = await noise_for_tool(store, key, rule=NoiseRule())
    assert noise.paths == {"$.result.x"} and noise.builtin  # 3 of 4 pairs: lower bound 0.52
    assert (await noise_for_tool(None, key)).paths == frozenset()


def record(n, body, *, server="quotes", tool="get_quote", arguments=None):
    arguments = arguments or {"q": 1}
    call = Call("mcp", server, tool, arguments, "s1")
    return Record(
        call,
        Decision(Route.REAL, "mode", "test"),
        answer(body),
        step=n,
        call_key=call_key("mcp", server, tool, arguments),
    )


def test_counter_steps_are_state_not_noise():
    counted = pair_disagreements(
        answer({"visits": 4, "price": 1.5}), answer({"visits": 5, "price": 1.7}), channel="mcp"
    )
    assert counted == {"$.result.price"}
    text = Observation([{"type": "text", "text": "visit number 9"}], Provenance.REAL)
    assert (
        pair_disagreements(
            text, Observation([{"type": "text", "text": "visit number 10"}], Provenance.REAL), channel="mcp"
        )
        == set()
    )
    # Not counters: a jump, a step down, two numbers moving, a timestamp's seconds.
    assert pair_disagreements(answer({"n": 4}), answer({"n": 40}), channel="mcp") == {"$.result.n"}
    assert pair_disagreements(answer({"n": 4}), answer({"n": 3}), channel="mcp") == {"$.result.n"}
    assert pair_disagreements(answer({"s": "3 of 7"}), answer({"s": "4 of 8"}), channel="mcp") == {"$.result.s"}
    clock = pair_disagreements(
        answer({"at": "2026-01-01T10:00:01+09:00"}), answer({"at": "2026-01-01T10:00:02+09:00"}), channel="mcp"
    )
    assert clock == {"$.result.at#instant"}


async def test_learner_counts_read_only_pairs_with_nothing_written_in_between():
    store = MemoryNoiseStore()
    learner = NoiseLearner(store)
    key = tool_key("mcp", "quotes", "get_quote")

    def read(n, price, *, read_only=True):
        learner.offer(record(n, {"price": price}), read_only=read_only, sent_in=learner.quiet_epoch("mcp", "quotes"))

    read(1, 1.0)
    read(2, 2.0)  # a pair
    learner.writing("mcp", "quotes")  # a write to the same server is sent ...
    read(3, 3.0)  # ... a read while it is in flight is no baseline
    learner.written("mcp", "quotes")
    read(4, 4.0)  # the previous answer (2) was read before the write: no pair
    learner.writing("mcp", "other")  # another server's writes do not matter
    read(5, 5.0)  # a pair with 4
    read(6, 6.0, read_only=False)  # a call that writes: no pair, and no baseline for the next
    read(7, 7.0)
    await learner.wait(5)
    assert (store.stats[key].pairs, learner.unsettled) == (2, 1)
    await learner.aclose()


async def test_probe_pairs_the_first_answer_with_a_second_call():
    store = MemoryNoiseStore()
    learner = NoiseLearner(store, probe_delay_s=0)
    first = record(1, {"price": 1.0})

    async def again():
        return answer({"price": 2.0})

    assert learner.probe(first, again, sent_in=learner.quiet_epoch("mcp", "quotes"))
    assert not learner.probe(first, again, sent_in=None)  # sent while something was writing: not probed
    await learner.wait(5)
    assert (
        store.stats[tool_key("mcp", "quotes", "get_quote")].disagreements == {"$.result.price": 1}
        and learner.probed == 1
    )
    await learner.aclose()


async def test_learner_asks_the_store_for_other_routers_writes_between_the_answers():
    """Another router's write to the server, between the first call's start and the second
    answer, is seen only in the store: the pair is not learned (unsettled)."""
    store = MemoryNoiseStore()
    learner = NoiseLearner(store, probe_delay_s=0)
    key = tool_key("mcp", "quotes", "get_quote")

    def read(n, price, ts):
        answered = record(n, {"price": price})
        answered.ts, answered.ended = ts, ts + 0.5
        learner.offer(answered, read_only=True, sent_in=learner.quiet_epoch("mcp", "quotes"))

    store.writes += [("mcp", "quotes", 10.0, 11.0), ("mcp", "other", 20.0, 21.0), ("http", "quotes", 20.0, 21.0)]
    read(1, 1.0, 9.0)
    read(2, 2.0, 10.5)  # 9.0 .. 11.0: the write to quotes came between
    read(3, 3.0, 20.0)  # 10.5 .. 20.5: it ended at 11.0, after the first call started
    read(4, 4.0, 30.0)  # 20.0 .. 30.5: writes to another server, another channel's: a pair
    await learner.wait(5)
    assert (store.stats[key].pairs, learner.unsettled, learner.learned) == (1, 2, 1)

    probed = record(5, {"price": 5.0})
    probed.ts = 40.0
    store.writes.append(("mcp", "quotes", 41.0, math.inf))  # started after the probed call, still in flight

    async def again():
        return answer({"price": 6.0})

    assert learner.probe(probed, again, sent_in=learner.quiet_epoch("mcp", "quotes"))
    await learner.wait(5)
    assert (store.stats[key].pairs, learner.unsettled, learner.probed) == (1, 3, 1)
    await learner.aclose()


async def test_a_store_that_cannot_tell_settles_no_pair():
    from records.store.protocol import StoreError

    class Unreachable(MemoryNoiseStore):
        async def writes_between(self, channel, server, *, since, until):
            raise StoreError("Redis is gone")

    learner = NoiseLearner(store := Unreachable())
    for n in (1, 2):
        learner.offer(record(n, {"price": n}), read_only=True, sent_in=learner.quiet_epoch("mcp", "quotes"))
    await learner.wait(5)
    assert (learner.unsettled, learner.learned, dict(store.stats)) == (1, 0, {})
    await learner.aclose()


def test_the_configured_rule_decides_what_simroute_noise_calls_noise(tmp_path):
    """`shadow.noise.min_pairs` / `min_rate` / `z` reach the rule: the same learned
    counts (3 of 3 pairs disagree at a path) are noise by default, not under a rule
    that asks for 5 pairs."""
    import asyncio
    import json

    from typer.testing import CliRunner

    from records.store.sqlite.store import SQLiteStore
    from router.cli.main import app

    async def learn() -> None:
        store = await SQLiteStore(tmp_path / "records.db").open()
        for _ in range(3):
            await store.add_noise_observation("k1", ["$.result.datetime#instant"], name="time.get_current_time")
        await store.aclose()

    asyncio.run(learn())

    def noisy(**rule) -> bool:
        config = tmp_path / "simroute.yaml"
        config.write_text(
            json.dumps(
                {
                    "store": {"path": str(tmp_path / "records.db")},
                    "shell": {"enabled": False},
                    "browser": {"enabled": False},
                    "shadow": {"noise": rule},
                }
            )
        )
        result = CliRunner().invoke(app, ["noise", "--config", str(config), "--json"])
        assert result.exit_code == 0, result.output
        [row] = [json.loads(line) for line in result.output.splitlines()]
        assert (row["path"], row["disagreements"], row["pairs"]) == ("$.result.datetime#instant", 3, 3)
        return row["noisy"]

    assert noisy() is True
    assert noisy(min_pairs=5) is False
    assert noisy(min_rate=0.5, z=3.0) is False  # a stricter confidence: 3 of 3 is not enough


async def test_one_tokens_answers_never_teach_anothers_noise_table():
    """With tokens, pairs are made within a namespace and counted under its prefix: alice's
    and bob's answers alternating make no pair across them; a session reads its own
    namespace's counts and the shared ones', never another token's."""
    from backends.replay import namespace_of

    store = MemoryNoiseStore()
    learner = NoiseLearner(store, scope=namespace_of)
    key = tool_key("mcp", "quotes", "get_quote")

    def read(n, session, price):
        answered = record(n, {"price": price})
        answered.call = Call("mcp", "quotes", "get_quote", {"q": 1}, session)
        learner.offer(answered, read_only=True, sent_in=learner.quiet_epoch("mcp", "quotes"))

    for n in range(0, 8, 2):
        read(n, f"alice/s{n}", 1.0)  # alice's price never moves ...
        read(n + 1, f"ci/s{n}", float(n))  # ... ci's does, every time
    await learner.wait(5)
    await learner.aclose()
    assert store.stats["alice/" + key].pairs == 3 and store.stats["alice/" + key].disagreements == {}
    assert store.stats["ci/" + key].pairs == 3 and set(store.stats["ci/" + key].disagreements) == {"$.result.price"}
    assert store.stats[key].pairs == 0  # no pair across the two namespaces
    assert (await noise_for_tool(store, key, scopes=("alice/",))).paths == frozenset()
    assert (await noise_for_tool(store, key, scopes=("bob/",))).paths == frozenset()  # never ci's unless shared
    assert (await noise_for_tool(store, key, scopes=("bob/", "ci/"))).paths == {"$.result.price"}  # ci shared
