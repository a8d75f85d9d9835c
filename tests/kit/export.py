"""`simroute export` run as a user runs it, and a loader of its `agentworldbench`
lines written from the format's published field list: `system`, the prompt's
turns (each with `turn_idx`, `role`, `content`), `turn_idx` (the turn to
predict) and `answer`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from kit.launch import simroute_executable


def export_dataset(config: Path, out: Path, *args: str) -> dict:
    """Runs `simroute export OUT --config CONFIG ARGS…`; returns the dataset card."""
    done = subprocess.run(
        [simroute_executable(), "export", str(out), "--config", str(config), *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return json.loads((out / "dataset.json").read_text())


def lines(path: Path) -> list[dict]:
    """Every line of a JSON-lines file, parsed (a line that does not parse fails the test)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def load_agentworldbench(path: Path) -> list[dict]:
    """Samples as an AgentWorldBench evaluation reads them: the chat to put to the world
    model (system, then the turns in order, the action to predict last) and the answer."""
    samples = []
    for line in lines(path):
        system, turns, turn_idx, answer = line["system"], line["turns"], line["turn_idx"], line["answer"]
        assert isinstance(system, str) and system and isinstance(answer, str)
        assert turns and turns[-1]["role"] == "user" and turns[-1]["turn_idx"] == turn_idx
        for index, turn in enumerate(turns):
            assert turn["role"] == ("user" if index % 2 == 0 else "assistant")  # action, observation, action, …
            assert turn["turn_idx"] == index // 2 + 1
        chat = [{"role": "system", "content": system}] + [{"role": t["role"], "content": t["content"]} for t in turns]
        samples.append({"domain": line["domain"], "messages": chat, "answer": answer, "meta": line["meta"]})
    return samples
