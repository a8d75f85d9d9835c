"""`simroute tune` as a user runs it, without the optional training stack: it documents
itself, says how to install the stack and exits 2 when asked to train, and writes the
training data and the model card of a tiny store with `--data-only`. The targets are
what the live parser reads back as the recorded real observations, and the split keeps
every session whole on one side."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from kit.export import lines, synthetic_rows
from kit.launch import model_path, simroute_executable
from kit.tune_run import simroute_tune, store_config

from backends.world_model.parse import parse_prediction
from calls import Call
from router.config import load_config
from router.runtime.training_prompts import LivePrompts
from router.tune.extra import missing_packages

pytestmark = pytest.mark.integration

RECORDS = 60  # six weather sessions of ten calls (tests/kit/export.py)


@pytest.fixture(scope="module")
async def tiny_store(tmp_path_factory) -> Path:
    """A config over a store of six sessions: real calls, some shadowed with a divergence, some simulated."""
    return await store_config(tmp_path_factory.mktemp("tiny"), RECORDS, str(model_path()))


def test_help_documents_the_run_and_its_options():
    done = subprocess.run(
        [simroute_executable(), "tune", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0, done.stderr
    for option in (
        "--from-export",
        "--hardest-first",
        "--min-divergence",
        "--epochs",
        "--seed",
        "--resume",
        "--adapter",
        "--merge",
        "--prepare",
        "--adopt",
        "--revert",
        "--margin",
        "--data-only",
    ):
        assert option in done.stdout, option


def test_training_without_the_extra_says_how_to_install_it_and_exits_2(tiny_store, tmp_path):
    if not missing_packages():
        pytest.skip("the training stack is installed here (make tune-check runs the training)")
    done = simroute_tune(str(tmp_path / "run"), "--config", str(tiny_store))
    assert done.returncode == 2, done.stderr
    assert "pip install 'simroute[tune]'" in done.stderr and "--data-only" in done.stderr
    assert not (tmp_path / "run").exists()  # nothing was exported for a run that cannot train


async def test_data_only_writes_live_targets_split_by_whole_sessions_and_the_card(tiny_store, tmp_path):
    out = tmp_path / "run"
    args = ("--config", str(tiny_store), "--data-only", "--test-fraction", "0.5", "--seed", "3", "--epochs", "3")
    done = simroute_tune(str(out), *args, "--hardest-first")
    assert done.returncode == 0, done.stderr
    train, test = lines(out / "train.jsonl"), lines(out / "test.jsonl")
    assert train and test
    sides = {side: {line["meta"]["session"] for line in rows} for side, rows in (("train", train), ("test", test))}
    assert not sides["train"] & sides["test"]  # no session on both sides
    rows = {row["id"]: row for row in synthetic_rows(0, RECORDS)}
    real_ids = {r["id"] for r in rows.values() if r["observation"]["provenance"] == "real"}
    for line in train + test:  # every example of a session is on its session's side
        side = line["meta"]["split"]
        assert line["meta"]["session"] in sides[side]
    # Every real observation of the store is a target, once (the synthetic rows repeat none).
    assert sorted(line["meta"]["record"] for line in train + test) == sorted(real_ids)

    # Each target, as the model runner generates it after its prefill, parses back to the real observation.
    config = load_config(tiny_store)
    store = await config.open_store(read_only=True).open()
    try:
        domain = LivePrompts(config, store).simulator.domains["mcp"]
    finally:
        await store.aclose()
    for line in train + test:
        row = rows[line["meta"]["record"]]
        call = Call("mcp", row["server"], row["tool"], row["arguments"], row["session"])
        target = line["messages"][-1]
        assert target["role"] == "assistant" and target["weight"] == 1 and line["meta"]["prefill"]
        parsed = domain.observation(call, parse_prediction(target["content"]))
        assert parsed.text == row["observation"]["content"][0]["text"] and not parsed.is_error

    # --hardest-first: each file's examples by divergence, the largest first, those without last.
    for rows_of_side in (train, test):
        divergences = [line["meta"]["divergence"] for line in rows_of_side]
        known = [d for d in divergences if d is not None]
        assert known == sorted(known, reverse=True) and divergences[: len(known)] == known

    card = json.loads((out / "card.json").read_text())
    assert card["status"] == "data" and card["candidate"] == {"kind": "adapter", "file": None, "sha256": None}
    assert card["base_model"]["sha256"] == hashlib.sha256(model_path().read_bytes()).hexdigest()
    assert card["data"]["examples"] == {"train": len(train), "test": len(test)}
    assert card["data"]["records_read"] == RECORDS and card["data"]["order"] == "divergence"
    assert card["data"]["split"]["seed"] == 3 and card["data"]["split"]["sessions"]["test"] == len(sides["test"])
    assert card["hyperparameters"]["epochs"] == 3 and card["hyperparameters"]["seed"] == 3
    assert card["hyperparameters"]["output"] == "adapter"
    for setting in ("state_layer_off", "end_to_end"):
        assert {who for figure in card["evaluation"][setting].values() for who in figure.values()} == {None}
    text = (out / "MODEL_CARD.md").read_text()
    assert card["base_model"]["sha256"] in text and "| fidelity where base wrong | — | — | — | — |" in text
    dataset = json.loads((out / "dataset.json").read_text())
    assert dataset["files"] == {"train": "train.jsonl", "test": "test.jsonl"} and dataset["formats"] == ["messages"]

    again = simroute_tune(str(out), *args)
    assert again.returncode == 1 and "--overwrite" in again.stderr  # a run is never overwritten unasked


def test_an_export_folder_gives_the_same_data_as_the_store(tiny_store, tmp_path):
    exported = subprocess.run(
        [simroute_executable(), "export", str(tmp_path / "export"), "--config", str(tiny_store)]
        + ["--format", "messages", "--test-fraction", "0.5", "--seed", "3"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert exported.returncode == 0, exported.stderr
    common = ("--config", str(tiny_store), "--data-only", "--test-fraction", "0.5", "--seed", "3")
    from_store = simroute_tune(str(tmp_path / "a"), *common)
    from_export = simroute_tune(str(tmp_path / "b"), *common, "--from-export", str(tmp_path / "export"))
    assert from_store.returncode == 0 and from_export.returncode == 0, from_store.stderr + from_export.stderr
    for name in ("train.jsonl", "test.jsonl"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()
    card = json.loads((tmp_path / "b" / "card.json").read_text())
    assert card["data"]["copied_from"] == str(tmp_path / "export")
    refused = simroute_tune(str(tmp_path / "c"), *common, "--from-export", str(tmp_path / "export"), "--hardest-first")
    assert refused.returncode == 2 and "not with --from-export" in refused.stderr


def test_prepare_does_nothing_when_the_tools_are_in_the_cache(tmp_path):
    import importlib.metadata

    version = importlib.metadata.version("llama-cpp-python")
    folder = tmp_path / "tune" / f"llama-cpp-python-{version}"
    folder.mkdir(parents=True)
    (folder / "prepared.json").write_text("{}")
    done = simroute_tune("--prepare", env={**os.environ, "SIMROUTE_CACHE": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert f"already in {folder}" in done.stderr and "downloading" not in done.stderr
