"""The model card's figures from compare-models' calls: fidelity overall and on the calls
the base model got wrong and right, the floor, the well-formed rate and latency, for the
base model and the candidate on the same calls."""

from __future__ import annotations

import pytest

from router.tune.figures import figures


def call(who: str, step: int, divergence: float, *, well_formed: bool = True, floor: float | None = None) -> dict:
    return {
        "candidate": who,
        "session": "s1",
        "step": step,
        "divergence": divergence,
        "well_formed": well_formed,
        "latency_s": 0.1 * (step + 1),
        "floor": floor,
        "judge_score": None,
    }


def test_the_candidate_is_measured_on_the_calls_the_base_got_wrong_and_right():
    calls = [
        call("base", 0, 0.9, floor=0.2),  # wrong
        call("base", 1, 0.1, floor=0.0),  # right
        call("base", 2, 0.8, well_formed=False),  # wrong
        call("candidate", 0, 0.3, floor=0.2),
        call("candidate", 1, 0.2, floor=0.0),
        call("candidate", 2, 0.1),
        call("another", 0, 0.0),  # neither: not counted
    ]
    out = figures(calls)
    assert out["fidelity"] == {"base": pytest.approx(0.4), "candidate": pytest.approx(0.8)}
    assert out["fidelity_where_base_wrong"] == {"base": pytest.approx(0.15), "candidate": pytest.approx(0.8)}
    assert out["fidelity_where_base_right"] == {"base": pytest.approx(0.9), "candidate": pytest.approx(0.8)}
    assert out["real_vs_real_floor"] == {"base": pytest.approx(0.9), "candidate": pytest.approx(0.9)}
    assert out["judge_score"] == {"base": None, "candidate": None}
    assert out["well_formed_rate"] == {"base": pytest.approx(2 / 3, abs=1e-4), "candidate": 1.0}
    assert out["latency_p50_s"] == {"base": pytest.approx(0.2), "candidate": pytest.approx(0.2)}


def test_no_calls_no_figures():
    out = figures([])
    assert {value for figure in out.values() for value in figure.values()} == {None}
