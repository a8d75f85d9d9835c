"""`simroute export`'s options: bad input gets a clear error, an existing dataset is kept."""

from __future__ import annotations

import asyncio
import json

import pytest
from kit.export import fill_store
from kit.launch import write_config
from typer.testing import CliRunner

from router.cli.main import app
from shadow.store.sqlite.store import SQLiteStore


@pytest.fixture
def config(tmp_path):
    async def fill():
        store = await SQLiteStore(tmp_path / "records.db").open()
        await fill_store(store, 40)
        await store.aclose()

    asyncio.run(fill())
    return write_config(tmp_path)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--format", "csv"], "unknown format 'csv'"),
        (["--status", "done"], "unknown status 'done'"),
        (["--since", "yesterday"], "expected a duration"),
        (["--token", "a/b"], "without '/'"),
        (["--min-divergence", "2"], "--min-divergence"),
    ],
)
def test_bad_options_are_refused_with_the_reason(config, tmp_path, args, message):
    result = CliRunner().invoke(app, ["export", str(tmp_path / "out"), "--config", str(config), *args])
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "out" / "dataset.json").exists()


def test_a_dataset_is_written_once_and_replaced_only_when_asked(config, tmp_path):
    out = tmp_path / "out"
    first = CliRunner().invoke(app, ["export", str(out), "--config", str(config), "--format", "messages", "--tool", "weather.alerts"])
    assert first.exit_code == 0, first.output
    card = json.loads((out / "dataset.json").read_text())
    assert card["filters"]["server"] == "weather" and card["filters"]["tool"] == "alerts" and card["formats"] == ["messages"]
    exported = [json.loads(line) for side in ("train", "test") for line in (out / "messages" / f"{side}.jsonl").read_text().splitlines()]
    assert exported and {line["meta"]["tool"] for line in exported} == {"alerts"}
    again = CliRunner().invoke(app, ["export", str(out), "--config", str(config)])
    assert again.exit_code == 1 and "--overwrite" in again.output
    assert CliRunner().invoke(app, ["export", str(out), "--config", str(config), "--overwrite"]).exit_code == 0
    assert json.loads((out / "dataset.json").read_text())["formats"] == ["agentworldbench", "messages", "preference"]


def test_no_store_yet_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["export", str(tmp_path / "out"), "--config", str(write_config(tmp_path))])
    assert result.exit_code == 1 and "no records yet" in result.output
