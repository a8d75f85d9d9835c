"""`simroute compare-models` as a user runs it, on a store filled by real runs of the
test toolbox (a stateful account: text tools, no output schema, so both model runners get
the same GBNF grammar): the bundled GGUF in-process against the same file served by
llama-cpp-python's server, both at temperature 0. A handful of calls: the machine is shared."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
from kit.launch import meta_of, model_path, records_of, simroute_executable, stdio_client, toolbox_server, write_config
from kit.llama_server import llama_cpp_server

pytestmark = [pytest.mark.integration, pytest.mark.serial]

CONTEXT = 2048
# One training session, then two held-out ones. Every balance is reached once, so each
# held-out answer is unique: shown in a prompt only if the held-out answers leaked.
TRAIN = [("add_funds", {"amount": 5}), ("get_balance", {})]
HELD_OUT = [
    [("add_funds", {"amount": 7}), ("get_balance", {})],
    [("add_funds", {"amount": 30}), ("get_balance", {})],
]


async def session(config: Path, calls) -> None:
    async with stdio_client(config) as client:
        for tool, arguments in calls:
            result = await client.call_tool(tool, arguments, raise_on_error=False)
            assert meta_of(result)["provenance"] == "real" and not result.is_error


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("compare")
    config = write_config(
        folder,
        mcpServers={"toolbox": toolbox_server(TOOLBOX_BALANCE=str(folder / "balance"))},
        # The same prompt for both model runners: no prefilled marker (a server gets plain
        # messages), signatures as the tool list, one generation budget.
        world_model={
            "model_path": str(model_path()),
            "context_tokens": CONTEXT,
            "max_tokens": 48,
            "prefill_observation": False,
            "tool_list": "signatures",
            "deadline_s": 180,
        },
    )
    for calls in [TRAIN, *HELD_OUT]:
        asyncio.run(session(config, calls))
    rows = records_of(config)
    sessions = list(dict.fromkeys(row["session"] for row in rows))
    assert len(sessions) == 3
    return {"config": config, "folder": folder, "rows": rows, "train": sessions[0], "held_out": sessions[1:]}


@pytest.fixture(scope="module")
def llama_server():
    with llama_cpp_server(model_path(), n_ctx=CONTEXT) as url:
        yield url


@pytest.fixture(scope="module")
def compared(recorded, llama_server) -> dict:
    prompts = recorded["folder"] / "prompts.jsonl"
    held = [arg for s in recorded["held_out"] for arg in ("--session", s)]
    done = subprocess.run(
        [simroute_executable(), "compare-models", "--config", str(recorded["config"]), *held]
        + ["--model", f"in-process={model_path()}", "--model", f"served={llama_server}"]
        + ["--temperature", "0", "--json", "--prompts", str(prompts)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    return {
        "document": json.loads(done.stdout),
        "prompts": [json.loads(line) for line in prompts.read_text().splitlines()],
    }


def answer(row: dict) -> str:
    return "\n".join(block["text"] for block in row["observation"]["content"] if block.get("type") == "text")


def test_the_same_model_in_process_and_served_gives_the_same_divergences(compared):
    document = compared["document"]
    calls = document["calls"]
    assert document["held_out"]["calls"] == 4 and len(calls) == 8
    by_call: dict[tuple[str, int], dict[str, float]] = {}
    for call in calls:
        assert call["channel"] == "mcp" and call["domain"] == "MCP" and call["prompt_tokens"] > 0
        by_call.setdefault((call["session"], call["step"]), {})[call["candidate"]] = call["divergence"]
    assert len(by_call) == 4
    for key, divergences in by_call.items():
        assert abs(divergences["in-process"] - divergences["served"]) <= 0.05, (key, divergences)
    # The table: a row per candidate and tool, with the real-vs-real floor (the
    # training session's get_balance answered another balance: a floor above 0).
    rows = {(row["candidate"], row["domain"], row["tool"]): row for row in document["rows"]}
    balance = rows["in-process", "MCP", "toolbox.get_balance"]
    assert balance["calls"] == 2 and balance["floor_pairs"] == 2 and balance["floor"] > 0
    assert rows["served", "MCP", "*"]["calls"] == rows["served", "all", "*"]["calls"] == 4
    assert 0 <= balance["latency_p50_s"] <= balance["latency_p95_s"]


def test_no_held_out_answer_reaches_a_prompt(recorded, compared):
    rows = recorded["rows"]
    prompts = compared["prompts"]
    assert len(prompts) >= 8  # every call of each candidate (a malformed answer asks once more)
    train_answers = {answer(row) for row in rows if row["session"] == recorded["train"]}
    # A held-out get_balance is shown the training session's answer to it ("balance 5"):
    # the examples come from the training side.
    balance_prompts = [p for p in prompts if '"get_balance"' in p["messages"][-1]["content"]]
    assert len(balance_prompts) >= 4
    assert all("balance 5" in json.dumps(p["messages"]) for p in balance_prompts)
    for prompt in prompts:
        text = json.dumps(prompt["messages"], ensure_ascii=False)
        seen_before = {
            answer(row) for row in rows if row["session"] == prompt["session"] and row["step"] < prompt["step"]
        }
        for row in rows:
            if row["session"] in recorded["held_out"] and answer(row) not in seen_before | train_answers:
                assert json.dumps(answer(row))[1:-1] not in text, (prompt["session"], prompt["step"], answer(row))
