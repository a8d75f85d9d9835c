"""The noise model: paths that real-vs-real pairs disagree at are learned as noise."""

import json

import pytest

from router.types import Call, Decision, Observation, Provenance, Route
from shadow.canonical import call_key, tool_key
from shadow.divergence import compare
from shadow.noise import MemoryNoiseStore, NoiseModel, NoiseRule, noise_for_tool, pair_disagreements, wilson_lower_bound
from shadow.records import Record


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
        model.observe(key, answer({"symbol": "ACME", "price": 101.0, "seq": 1}), answer({"symbol": "ACME", "price": price, "seq": 1}), channel="mcp")
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
        await store.add_noise_observation(key, {"$.result.x", "$.result.x"})
    await store.add_noise_observation(key, set())
    noise = await noise_for_tool(store, key, rule=NoiseRule())
    assert noise.paths == {"$.result.x"} and noise.builtin  # 3 of 4 pairs: lower bound 0.52
    assert (await noise_for_tool(None, key)).paths == frozenset()


def record(n, body, *, ts, provenance=Provenance.REAL, arguments=None):
    arguments = arguments or {"q": 1}
    call = Call("mcp", "quotes", "get_quote", arguments, "s1")
    observation = answer(body, provenance)
    return Record(call, Decision(Route.REAL, "mode", "test"), observation, step=n, call_key=call_key("mcp", "quotes", "get_quote", arguments), ts=ts).to_json()


def test_learns_from_records_grouped_by_call_key():
    rows = [record(n, {"price": 100 + n, "name": "ACME"}, ts=float(n)) for n in range(4)]
    rows.append(record(9, {"price": 1, "name": "other"}, ts=9.0, arguments={"q": 2}))  # another call: no pair
    rows.append(record(10, {"price": 7, "name": "sim"}, ts=10.0, provenance=Provenance.SIM))  # not real: not learned from
    model = NoiseModel().learn_from_records(reversed(rows))  # order of the rows does not matter
    table = model.table()
    assert [(row.tool, row.path, row.disagreements, row.pairs, row.noisy) for row in table] == [("quotes.get_quote", "$.result.price", 3, 3, True)]
