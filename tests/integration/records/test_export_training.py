"""`simroute export` for training stacks, as a user runs it after episodes: the
`trajectories` format (one line per episode in OpenAI/TRL's tool-calling layout, with
the reward and `infra_error`), no file for a split without lines (the card and the
summary say so), and every file loaded with Hugging Face `datasets` the way a training
script loads it. TRL's conversational tool-calling layout is checked by schema on the
rows `datasets` gives back (no trl or torch here)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
from kit.launch import simroute_executable, toolbox_server, write_config

import simroute
from router.cli.launch import free_port

pytestmark = pytest.mark.integration

UNICODE = "Zürich 中文 😀"

# TRL's conversational tool-calling layout (OpenAI's chat format), as rows come back
# from Arrow: a key another message has appears as null.
NULLABLE_STRING = {"type": ["string", "null"]}
TOOL_CALL = {
    "type": "object",
    "required": ["id", "type", "function"],
    "properties": {
        "id": {"type": "string"},
        "type": {"const": "function"},
        "function": {
            "type": "object",
            "required": ["name", "arguments"],
            "properties": {"name": {"type": "string", "minLength": 1}, "arguments": {"type": "string"}},
        },
    },
}
ASSISTANT = {
    "type": "object",
    "required": ["role", "tool_calls"],
    "properties": {
        "role": {"const": "assistant"},
        "content": NULLABLE_STRING,
        "tool_calls": {"type": "array", "minItems": 1, "items": TOOL_CALL},
    },
}
TOOL = {
    "type": "object",
    "required": ["role", "content", "tool_call_id", "name", "provenance"],
    "properties": {
        "role": {"const": "tool"},
        "content": {"type": "string"},
        "tool_call_id": {"type": "string"},
        "name": {"type": "string"},
        "provenance": {"enum": ["real", "sim", "replay", "none"]},
        "infra_error": {"type": "boolean"},
    },
}
TRAJECTORY = {
    "type": "object",
    "required": ["messages", "reward", "infra_error"],
    "properties": {
        "messages": {"type": "array", "minItems": 2, "items": {"oneOf": [ASSISTANT, TOOL]}},
        "reward": {"type": ["number", "null"]},
        "infra_error": {"type": "boolean"},
    },
}


def called_echo(view) -> bool:
    """The episodes' verifier: did the agent call echo?"""
    return any(record["tool"] == "echo" for record in view.records)


def export(config: Path, out: Path, *formats: str, overwrite: bool = False) -> tuple[dict, str]:
    args = [arg for name in formats for arg in ("--format", name)] + (["--overwrite"] if overwrite else [])
    done = subprocess.run(
        [simroute_executable(), "export", str(out), "--config", str(config), "--test-fraction", "0", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads((out / "dataset.json").read_text()), done.stderr


def load(out: Path, card: dict, name: str):
    from datasets import load_dataset

    files = {side: str(out / path) for side, path in card["files"][name].items() if path is not None}
    return load_dataset("json", data_files=files, cache_dir=str(out.parent / "hf-cache"))


def test_trajectories_and_messages_load_with_datasets_and_a_split_without_lines_has_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # A world model nobody answers at: a simulated step is simroute's failure (infra_error).
    config = write_config(
        tmp_path,
        mcpServers={"toolbox": toolbox_server()},
        world_model={"engine": "openai", "url": f"http://127.0.0.1:{free_port()}/v1", "model": "none", "deadline_s": 5},
        episodes={
            "verifiers": {"called_echo": {"entry_point": f"{__name__}:called_echo"}},
            "default_verifier": "called_echo",
        },
    )
    env = simroute.Env(config=config)
    try:
        env.reset(seed=1, options={"route": "real"})
        env.step({"type": "call_tool", "tool_name": "echo", "arguments": {"text": UNICODE}})
        env.step({"type": "call_tool", "tool_name": "fail", "arguments": {"message": "disk full"}})
        assert env.step({"type": "verify"})[1] == 1.0
        real_episode = env.episode.id
        env.reset(seed=2, options={"route": "sim"})
        *_, info = env.step(
            {"type": "call_tool", "tool_name": "next_ticket", "arguments": {}}
        )  # never recorded: the model is asked
        assert info["infra_error"] is True and info["provenance"] == "sim"
        failed_episode = env.episode.id
    finally:
        env.close()

    out = tmp_path / "dataset"
    card, summary = export(config, out, "trajectories", "messages", "preference")
    # No shadow pair diverged: no preference line, so no preference file, and the card and summary say so.
    assert card["counts"]["lines"]["preference"] == {"train": 0, "test": 0}
    assert card["files"]["preference"] == {"train": None, "test": None} and not (out / "preference").exists()
    assert card["files"]["trajectories"] == {"train": "trajectories/train.jsonl", "test": None}
    assert "no lines, so no file, for" in summary and "preference/train" in summary
    assert [path.name for path in out.rglob("*.jsonl") if path.stat().st_size == 0] == []

    trajectories = load(out, card, "trajectories")["train"]
    rows = {row["meta"]["episode_id"]: row for row in trajectories}
    assert (
        set(rows) == {real_episode, failed_episode}
        and len(trajectories) == card["counts"]["lines"]["trajectories"]["train"]
    )
    for row in rows.values():
        jsonschema.validate(row, TRAJECTORY)  # TRL's tool-calling layout, after the Arrow round trip
        calls = [m for m in row["messages"] if m["role"] == "assistant"]
        results = [m for m in row["messages"] if m["role"] == "tool"]
        assert [c["tool_calls"][0]["id"] for c in calls] == [r["tool_call_id"] for r in results]

    real = rows[real_episode]
    assert (real["reward"], real["infra_error"], real["meta"]["verifier"]) == (1.0, False, "called_echo")
    echo_call, echo_result, fail_call, fail_result = real["messages"]
    assert echo_call["tool_calls"][0]["function"]["name"] == "echo"
    assert json.loads(echo_call["tool_calls"][0]["function"]["arguments"]) == {"text": UNICODE}
    assert (echo_result["content"], echo_result["provenance"], echo_result["infra_error"]) == (UNICODE, "real", False)
    assert (
        fail_result["is_error"] and "disk full" in fail_result["content"] and fail_result["infra_error"] is False
    )  # the agent's error
    assert json.loads(fail_call["tool_calls"][0]["function"]["arguments"]) == {"message": "disk full"}

    failed = rows[failed_episode]
    assert (failed["reward"], failed["infra_error"]) == (None, True)  # never verified; the world model failed
    [result] = [m for m in failed["messages"] if m["role"] == "tool"]
    assert result["provenance"] == "sim" and result["infra_error"] and result["content"].startswith("simroute:")

    messages = load(out, card, "messages")["train"]
    assert len(messages) == card["counts"]["lines"]["messages"]["train"] >= 2
    for row in messages:
        target = row["messages"][-1]
        # An endpoint model runner has no prefill: the target is in the tags the prompt asks for.
        assert row["meta"]["prefill"] == "" and target["content"].startswith("<predicted_observation>\n")
        assert "inside <predicted_observation></predicted_observation>" in row["messages"][-2]["content"]
    assert card["generation"] == {"prefill": "", "target": "the observation inside <predicted_observation> tags"}

    export(config, out, "trajectories", overwrite=True)  # over the dataset before it: nothing stale stays
    assert sorted(str(path.relative_to(out)) for path in out.rglob("*.jsonl")) == ["trajectories/train.jsonl"]
