"""`simroute tune --judge`: the evaluation hands one judge to both settings'
compare-models runs, closes it when they end, and the card names it and carries its
mean score per model. compare-models itself (its judging of each call) is faked here:
tests/integration/world_model/test_compare_models_judge.py judges real calls."""

from __future__ import annotations

import json
from pathlib import Path

import router.tune.evaluate as evaluation
from router.config import Config


def held_out_split(folder: Path) -> None:
    line = {"messages": [], "meta": {"session": "s-held"}}
    (folder / "test.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")


def judged_calls(score: float) -> list[dict]:
    return [
        {
            "candidate": who,
            "session": "s-held",
            "step": 0,
            "divergence": 0.2,
            "well_formed": True,
            "latency_s": 0.5,
            "floor": None,
            "judge_score": score + (10 if who == "candidate" else 0),
        }
        for who in ("base", "candidate")
    ]


async def test_one_judge_scores_both_settings_and_the_card_names_it(tmp_path, monkeypatch):
    held_out_split(tmp_path)
    given = []

    async def compare(config, pair, held_out, *, judge, end_to_end, **options):
        given.append((judge, end_to_end, judge.model_runner.base_url))
        return {"held_out": {"sessions": 1, "calls": 1}, "calls": judged_calls(60.0 if end_to_end else 40.0)}

    closed = []

    async def aclose(self):
        closed.append(self)

    monkeypatch.setattr(evaluation, "compare_on_held_out", compare)
    monkeypatch.setattr(evaluation.ModelRunnerJudge, "aclose", aclose)
    report = await evaluation.evaluate(
        Config(), tmp_path, Path("base.gguf"), Path("adapter.gguf"), judge=("http://127.0.0.1:9/v1", "grader")
    )
    [(judge, off, endpoint), (again, on, _)] = given
    assert judge is again and (off, on) == (False, True) and "127.0.0.1:9" in endpoint
    assert closed == [judge]  # closed once, after both settings
    assert report["judge"] == {"model": "grader"}
    assert report["state_layer_off"]["judge_score"] == {"base": 40.0, "candidate": 50.0}
    assert report["end_to_end"]["judge_score"] == {"base": 60.0, "candidate": 70.0}


async def test_without_a_judge_none_is_asked_and_the_card_says_how_to_add_one(tmp_path, monkeypatch):
    held_out_split(tmp_path)

    async def compare(config, pair, held_out, *, judge, end_to_end, **options):
        assert judge is None
        return {"held_out": {"sessions": 1, "calls": 1}, "calls": judged_calls(0.0)}

    monkeypatch.setattr(evaluation, "compare_on_held_out", compare)
    report = await evaluation.evaluate(Config(), tmp_path, Path("base.gguf"), None)
    assert report["judge"] is None
