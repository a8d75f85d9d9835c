"""`simroute tune`'s round trip with the training stack, as a user runs it, on a tiny
llama model built here (tests/kit/tiny_llama.py: random weights, the bundled model's
tokenizer) and a tiny store: the training data, a LoRA adapter trained for a few steps,
converted to GGUF, which llama-cpp-python loads, evaluated by compare-models against
the base model on the held-out sessions, and the model card filled in; `--resume`
continues from the last checkpoint; the prompt trained on is the one the model runner
sends. Needs `simroute[tune]` and the conversion tools: `make tune-check`, never CI."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kit.judge import judge_stub
from kit.launch import model_path, simroute_executable
from kit.tiny_llama import write_tiny_llama
from kit.tune_run import simroute_tune, store_config

from router.tune.extra import missing_packages
from router.tune.prepare import cache_folder, installed_version, prepare

pytestmark = [pytest.mark.integration, pytest.mark.tune]

RECORDS = 40  # four weather sessions of ten calls (tests/kit/export.py)
TRAINING = ("--epochs", "2", "--test-fraction", "0.5", "--seed", "3", "--max-tokens", "256", "--eval-calls", "4")


@pytest.fixture(scope="module", autouse=True)
def training_stack():
    if missing := missing_packages():
        pytest.fail(f"the training stack is not installed ({', '.join(missing)}): pip install -e '.[tune]'")
    prepare(installed_version(), cache_folder())  # nothing done when the tools are in the cache


@pytest.fixture(scope="module")
async def tiny_run(tmp_path_factory) -> Path:
    """A config over a store of four sessions whose world model is a tiny random llama."""
    folder = tmp_path_factory.mktemp("tiny")
    write_tiny_llama(model_path(), folder / "tiny.gguf")
    return await store_config(folder, RECORDS, "tiny.gguf")


def tune(*args: str):
    """`simroute tune` offline (nothing is downloaded while training), up to 15 minutes."""
    return simroute_tune(*args, timeout=900, env={**os.environ, "HF_HUB_OFFLINE": "1"})


def test_a_run_trains_converts_and_evaluates_an_adapter(tiny_run, tmp_path):
    out = tmp_path / "run"
    with judge_stub() as judge:
        done = tune(str(out), "--config", str(tiny_run), *TRAINING, "--judge", judge.url, "--judge-model", "grader")
        judged = len(judge.bodies)
    assert done.returncode == 0, done.stderr
    assert "held-out fidelity" in done.stderr

    card = json.loads((out / "card.json").read_text())
    adapter = out / "adapter.gguf"
    assert card["status"] == "evaluated"
    assert card["candidate"] == {
        "kind": "adapter",
        "file": "adapter.gguf",
        "sha256": hashlib.sha256(adapter.read_bytes()).hexdigest(),
    }
    training = card["training"]
    assert [epoch["epoch"] for epoch in training["epochs"]] == [1, 2] and training["device"] == "cpu"
    assert training["examples"]["trained"] == card["data"]["examples"]["train"]
    assert all(epoch["tokens_per_s"] > 0 for epoch in training["epochs"])
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["epoch-1", "epoch-2"]

    evaluation = card["evaluation"]
    assert evaluation["held_out"] == {"sessions": card["data"]["split"]["sessions"]["test"], "calls": 4}
    for setting in ("state_layer_off", "end_to_end"):
        for figure in ("fidelity", "well_formed_rate", "latency_p50_s"):
            assert all(evaluation[setting][figure][who] is not None for who in ("base", "candidate")), figure
    calls = json.loads((out / "evaluation-state_layer_off.json").read_text())
    assert calls["candidates"][1] == {
        "name": "candidate",
        "model": str(tiny_run.parent / "tiny.gguf"),
        "lora_path": str(adapter),
    }
    assert len(calls["calls"]) == 8  # the same four calls, each model
    # The judge scored every well-formed simulated answer of both settings, and nothing else.
    assert card["evaluation"]["judge"] == {"model": "grader"}
    every = calls["calls"] + json.loads((out / "evaluation-end_to_end.json").read_text())["calls"]
    well_formed = [call for call in every if call["well_formed"]]
    assert judged == len(well_formed) > 0
    assert all(call["judge_score"] is not None for call in well_formed)
    text = (out / "MODEL_CARD.md").read_text()
    assert "## Training" in text and card["candidate"]["sha256"] in text and "| fidelity | " in text

    # The adapter is what the model runner loads: the config's lora_path, as compare-models takes it too.
    compared = subprocess.run(
        [simroute_executable(), "compare-models", "--config", str(tiny_run), "--json", "--max-calls", "2"]
        + ["--test-split", str(out / "test.jsonl"), "--model", f"tuned={tiny_run.parent / 'tiny.gguf'}+{adapter}"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert compared.returncode == 0, compared.stderr
    assert json.loads(compared.stdout)["candidates"][0]["lora_path"] == str(adapter)


def test_resume_continues_from_the_last_checkpoint(tiny_run, tmp_path):
    out = tmp_path / "run"
    first = tune(str(out), "--config", str(tiny_run), *TRAINING[2:], "--epochs", "1")
    assert first.returncode == 0, first.stderr
    again = tune(str(out), "--config", str(tiny_run), *TRAINING[2:], "--epochs", "2", "--resume")
    assert again.returncode == 0, again.stderr
    assert "resuming the run" in again.stderr
    training = json.loads((out / "card.json").read_text())["training"]
    assert [epoch["epoch"] for epoch in training["epochs"]] == [1, 2] and training["resumed_from_epoch"] == 1


def test_the_prompt_trained_on_is_the_one_the_model_runner_sends(tiny_run, tmp_path):
    """Token for token: the transformers tokenizer and chat template read from the GGUF
    against llama-cpp-python's formatter of the same file, the prefill after it."""
    code = r"""
import json, sys
from pathlib import Path
from llama_cpp import Llama
from backends.world_model.chat_formats import template_formatter
from router.tune.base_model import base_folder, load_for_training
from router.tune.examples import prompt_and_target
gguf, train = Path(sys.argv[1]), Path(sys.argv[2])
_, tokenizer = load_for_training(base_folder(gguf, train.parent), "cpu")
llama = Llama(model_path=str(gguf), vocab_only=True, verbose=False)
formatter = template_formatter(llama, gguf)
for text in train.read_text().splitlines():
    line = json.loads(text)
    prompt, target = prompt_and_target(line, tokenizer)
    context = [{"role": m["role"], "content": m["content"]} for m in line["messages"][:-1]]
    served = formatter(messages=context).prompt + line["meta"]["prefill"]
    assert prompt == served, (prompt[-120:], served[-120:])
    ids = llama.tokenize(served.encode(), add_bos=False, special=True)
    assert tokenizer.encode(prompt, add_special_tokens=False) == ids
    assert target == line["messages"][-1]["content"] + "<|im_end|>"
print("same")
"""
    out = tmp_path / "run"
    done = tune(str(out), "--config", str(tiny_run), "--data-only", "--test-fraction", "0.5")
    assert done.returncode == 0, done.stderr
    checked = subprocess.run(
        [sys.executable, "-c", code, str(tiny_run.parent / "tiny.gguf"), str(out / "train.jsonl")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.stdout.strip() == "same", checked.stderr


def test_merge_converts_the_whole_model_and_evaluates_it(tiny_run, tmp_path):
    out = tmp_path / "run"
    done = tune(str(out), "--config", str(tiny_run), *TRAINING[2:], "--epochs", "1", "--merge")
    assert done.returncode == 0, done.stderr
    card = json.loads((out / "card.json").read_text())
    assert card["status"] == "evaluated" and card["candidate"]["kind"] == "merged"
    assert card["candidate"]["file"] == "model.gguf" and not (out / "adapter.gguf").exists()
    calls = json.loads((out / "evaluation-state_layer_off.json").read_text())
    assert calls["candidates"][1] == {"name": "candidate", "model": str(out / "model.gguf")}
