"""`simroute judge` with the bundled GGUF model served by llama-cpp-python's
OpenAI-compatible server: the pipeline runs end to end (pairs put to the model
within their deadline, verdicts parsed or counted as failed, scores stored). A
135M model is no judge: its scores are not asserted."""

from __future__ import annotations

import asyncio
import json

import pytest
from kit.judge import judged_rows, llama_cpp_server
from kit.launch import model_path, write_config
from typer.testing import CliRunner

from records.judge.prompt import DIMENSIONS
from records.store.protocol import RecordFilter
from records.store.sqlite.store import SQLiteStore
from router.cli.main import app

# The bundled GGUF model runs here, against deadlines: one test at a time (`serial`).
pytestmark = [pytest.mark.integration, pytest.mark.serial]


async def _stored(path) -> list[dict]:
    store = await SQLiteStore(path, read_only=True).open()
    try:
        return await store.judge_summary(RecordFilter(since=0))
    finally:
        await store.aclose()


def test_judge_with_the_bundled_model_behind_llama_cpp_server(tmp_path):
    config = write_config(tmp_path)

    async def fill():
        store = await SQLiteStore(tmp_path / "records.db").open()
        await store.upsert(judged_rows())
        await store.aclose()

    asyncio.run(fill())
    with llama_cpp_server(model_path()) as url:
        args = [
            "judge",
            "--config",
            str(config),
            "--endpoint",
            url,
            "--model",
            "smollm2",
            "--limit",
            "3",
            "--controls",
            "2",
        ]
        result = CliRunner().invoke(app, [*args, "--deadline", "120", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    simulated, control = report["simulated"], report["control"]
    assert simulated["pairs"] == 3 and control["pairs"] == 2  # every pair put to the judge
    for part in (simulated, control):
        assert part["scored"] + part["failed"] == part["pairs"]
        if part["scored"]:
            assert all(1 <= part["dimensions"][name] <= 5 for name in DIMENSIONS) and 0 <= part["score_100"] <= 100
    assert report["stored"] == simulated["scored"] + control["scored"]
    stored = asyncio.run(_stored(tmp_path / "records.db"))
    assert sum(entry["simulated"]["pairs"] + entry["control"]["pairs"] for entry in stored) == report["stored"]
    assert all(entry["judge"] == "smollm2" for entry in stored)
