"""Which sessions `simroute compare-models` holds out, and which of their calls it measures."""

from __future__ import annotations

import json

import pytest
from kit.calls import make_call

from calls import Decision, Observation, Provenance, Route
from records.export.options import SessionSplit
from records.record import Record
from router.reports.held_out import HeldOut, real_answer, sessions_of_split


def record(served: Observation, *, shadow: Observation | None = None, status="complete", perturbation=None) -> Record:
    return Record(
        call=make_call("get"),
        decision=Decision(Route.SHADOW, "mode", ""),
        served=served,
        step=0,
        call_key="k",
        shadow=shadow,
        status=status,
        perturbation=perturbation,
    )


def text(value: str, provenance: Provenance) -> Observation:
    return Observation(content=[{"type": "text", "text": value}], provenance=provenance)


def test_named_sessions_or_the_exports_test_side():
    named = HeldOut(sessions=frozenset({"a", "b"}))
    assert named.withheld("a") and not named.withheld("c")
    split = SessionSplit(test_fraction=0.5, seed=3)
    by_split = HeldOut(split=split)
    sessions = [f"s{n}" for n in range(200)]
    assert [by_split.withheld(s) for s in sessions] == [split.side(s) == "test" for s in sessions]  # the export's split
    assert 60 < sum(by_split.withheld(s) for s in sessions) < 140
    assert by_split.describe() == {"by": "split", "seed": 3, "test_fraction": 0.5}
    with pytest.raises(ValueError, match="not both"):
        HeldOut(sessions=frozenset({"a"}), split=split)
    with pytest.raises(ValueError, match="not both"):
        HeldOut()
    with pytest.raises(ValueError, match="no held-out session"):
        HeldOut(sessions=frozenset())


def test_an_exported_split_names_its_sessions(tmp_path):
    path = tmp_path / "test.jsonl"
    lines = [{"meta": {"session": "alice/1"}}, {"meta": {"session": "bob"}}, {"meta": {"session": "alice/1"}}]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    assert sessions_of_split(path) == {"alice/1", "bob"}
    path.write_text(json.dumps({"meta": {"session": "a"}}) + "\n" + json.dumps({"answer": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"test.jsonl:2: not an exported line"):
        sessions_of_split(path)
    path.write_text("")
    with pytest.raises(ValueError, match="no exported lines"):
        sessions_of_split(path)


def test_the_real_answer_is_the_served_one_or_the_shadows_real_side():
    real, sim = text("42", Provenance.REAL), text("41", Provenance.SIM)
    assert real_answer(record(real, shadow=sim)) is real
    assert real_answer(record(sim, shadow=real)) is real  # served simulated, shadowed against real
    assert real_answer(record(sim)) is None  # no real answer to measure against
    assert real_answer(record(text("r", Provenance.REPLAY))) is None
    assert real_answer(record(real, perturbation={"kind": "delay"})) is None  # a perturbed answer is never a target
    assert real_answer(record(real, status="started")) is None
