"""Which records give pairs to judge: simulated pairs from shadow records, control
pairs from two sessions' real answers to the same call; the limits and the export's filters."""

from __future__ import annotations

from calls import Call, Decision, Observation, Provenance, Route
from records.export.options import ExportFilter
from records.judge.pairs import CONTROL, SIMULATED, PairFinder
from records.record import Record


def obs(text: str, provenance: Provenance, *, is_error: bool = False) -> Observation:
    return Observation(content=[{"type": "text", "text": text}], provenance=provenance, is_error=is_error)


def record(
    session: str, key: str, *, served: Observation, shadow: Observation | None = None, tool: str = "forecast", **extra
) -> Record:
    return Record(
        call=Call("mcp", "weather", tool, {"k": key}, session),
        decision=Decision(Route.SHADOW if shadow else Route.REAL, "mode", "test"),
        served=served,
        step=1,
        call_key=key,
        shadow=shadow,
        **extra,
    )


def test_a_shadow_pair_is_judged_real_against_simulated_whichever_side_was_served():
    finder = PairFinder(ExportFilter(), simulated=10, controls=0)
    served_real = record("a", "k1", served=obs("real 1", Provenance.REAL), shadow=obs("sim 1", Provenance.SIM))
    served_sim = record("a", "k2", served=obs("sim 2", Provenance.SIM), shadow=obs("real 2", Provenance.REAL))
    pairs = finder.feed(served_real) + finder.feed(served_sim)
    assert [(p.kind, p.reference.text, p.candidate.text) for p in pairs] == [
        (SIMULATED, "real 1", "sim 1"),
        (SIMULATED, "real 2", "sim 2"),
    ]


def test_no_pair_without_a_real_side_or_a_prediction():
    finder = PairFinder(ExportFilter(), simulated=10, controls=0)
    only_sim = record("a", "k1", served=obs("sim", Provenance.SIM))
    failed = record(
        "a", "k2", served=obs("real", Provenance.REAL), shadow=obs("simroute: timed out", Provenance.SIM, is_error=True)
    )
    perturbed = record(
        "a",
        "k3",
        served=obs("cut", Provenance.REAL),
        shadow=obs("sim", Provenance.SIM),
        perturbation={"kind": "truncate"},
    )  # no unperturbed answer kept: no reference
    assert finder.feed(only_sim) == finder.feed(failed) == finder.feed(perturbed) == []


def test_a_control_pairs_two_sessions_real_answers_to_the_same_call_once():
    finder = PairFinder(ExportFilter(), simulated=0, controls=10)
    first = record("a", "k", served=obs("3 C", Provenance.REAL))
    same_session = record("a", "k", served=obs("3 C", Provenance.REAL))
    other = record("b", "k", served=obs("3.1 C", Provenance.REAL))
    third = record("c", "k", served=obs("3.2 C", Provenance.REAL))
    assert finder.feed(first) == [] and finder.feed(same_session) == []
    (pair,) = finder.feed(other)
    assert pair.kind == CONTROL and pair.record is other and pair.other == first.id
    assert (pair.reference.text, pair.candidate.text) == ("3 C", "3.1 C")
    assert finder.feed(third) == []  # one control per call


def test_limits_and_filters():
    finder = PairFinder(ExportFilter(tool="forecast"), simulated=1, controls=1)
    shadowed = [record(s, f"k{s}", served=obs("r", Provenance.REAL), shadow=obs("s", Provenance.SIM)) for s in "ab"]
    assert len(finder.feed(shadowed[0])) == 1 and finder.feed(shadowed[1]) == []
    other_tool = record("a", "x", served=obs("r", Provenance.REAL), tool="alerts")
    assert (
        finder.feed(other_tool) == []
        and finder.feed(record("b", "x", served=obs("r", Provenance.REAL), tool="alerts")) == []
    )
    assert not finder.done
    finder.feed(record("c", "ka", served=obs("r", Provenance.REAL)))
    assert finder.done
