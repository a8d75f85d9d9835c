"""A tuning run's settings are checked when built, the model card records them as they
were, and the card's figures stay empty until an evaluation fills them."""

from __future__ import annotations

import hashlib

import pytest

from router.tune.card import FIGURES, markdown, model_card, sha256_of
from router.tune.extra import INSTALL, install_hint
from router.tune.settings import DataSettings, Hyperparameters, TuneSettings, resumed

DATASET = {
    "source": {"kind": "sqlite", "path": "records.db"},
    "files": {"train": "train.jsonl", "test": None},
    "filters": {"min_divergence": 0.3, "channel": None, "tokens": []},
    "order": {"by": "session"},
    "generation": {"prefill": "**Environment Observation:**\n", "target": "the observation, after the prefill"},
    "split": {"by": "session", "seed": 5, "test_fraction": 0.1, "sessions": {"train": 4, "test": 0}},
    "counts": {
        "records_read": 12,
        "lines": {"messages": {"train": 9, "test": 0}},
        "examples_by_domain": {"MCP": 9},
        "duplicates_collapsed": 1,
    },
}


def settings(**hyper) -> TuneSettings:
    return TuneSettings(DataSettings(min_divergence=0.3, seed=5), Hyperparameters(seed=5, **hyper))


@pytest.mark.parametrize(
    "build, problem",
    [
        (lambda: DataSettings(min_divergence=1.5), "divergence threshold"),
        (lambda: DataSettings(test_fraction=1.0), "nothing to train on"),
        (lambda: Hyperparameters(epochs=0), "epochs must be at least 1"),
        (lambda: Hyperparameters(learning_rate=0.0), "learning rate"),
        (lambda: Hyperparameters(target_modules=()), "no module"),
        (lambda: TuneSettings(DataSettings(), Hyperparameters(), output="lora"), "unknown output"),  # type: ignore[arg-type]
        (lambda: TuneSettings(DataSettings(), Hyperparameters(), margin=2.0), "margin"),
    ],
)
def test_bad_settings_are_refused_saying_why(build, problem):
    with pytest.raises(ValueError, match=problem):
        build()


def test_the_card_records_the_data_the_hyperparameters_and_the_base_models_hash(tmp_path):
    base = tmp_path / "base.gguf"
    base.write_bytes(b"GGUF and weights")
    card = model_card(dataset=DATASET, settings=settings(epochs=3), base_model=base, version="0.1.0", created="now")
    assert card["base_model"] == {
        "file": "base.gguf",
        "path": str(base),
        "sha256": hashlib.sha256(base.read_bytes()).hexdigest(),
    }
    assert card["data"]["examples"] == {"train": 9, "test": 0}
    assert card["data"]["filters"] == {"min_divergence": 0.3}  # the filters that were set
    assert card["hyperparameters"]["epochs"] == 3 and card["hyperparameters"]["target_modules"] == [
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
    ]
    assert card["adoption"] == {"margin": 0.05, "adopted": None, "previous": None, "reverted": None}
    assert set(card["evaluation"]["state_layer_off"]) == set(FIGURES)
    text = markdown(card)
    assert "| epochs | 3 |" in text and "| fidelity | — | — | — | — |" in text and "status: **data**" in text


def test_a_missing_base_model_has_no_hash(tmp_path):
    assert sha256_of(tmp_path / "gone.gguf") is None


def test_the_install_hint_names_the_extra_and_what_is_missing():
    hint = install_hint(["torch", "peft"])
    assert INSTALL in hint and "torch, peft" in hint


def test_a_resumed_run_keeps_its_recorded_hyperparameters_and_may_raise_the_epochs():
    recorded = TuneSettings(
        DataSettings(seed=5), Hyperparameters(seed=5, lora_rank=8, lora_alpha=16.0, epochs=2), output="merged"
    )
    asked = TuneSettings(DataSettings(), Hyperparameters(learning_rate=0.1))
    same = resumed(asked, recorded.describe(), None)
    assert same.hyperparameters == recorded.hyperparameters and same.output == "merged"
    assert resumed(asked, recorded.describe(), 4).hyperparameters.epochs == 4


@pytest.mark.parametrize("judge", [{"model": "grader"}, None])
def test_the_model_card_says_which_judge_scored_the_calls(tmp_path, judge):
    card = model_card(
        dataset=DATASET, settings=settings(), base_model=tmp_path / "base.gguf", version="0", created="now"
    )
    card["evaluation"] |= {"held_out": {"sessions": 1, "calls": 2}, "judge": judge}
    text = markdown(card)
    assert ("the judge: grader" in text) == (judge is not None)
    assert ("no judge (`--judge URL`)" in text) == (judge is None)
