"""`simroute export`'s options: bad input gets a clear error, an existing dataset is kept."""

from __future__ import annotations

import asyncio
import json

import pytest
from kit.export import fill_store
from kit.launch import write_config
from typer.testing import CliRunner

from records.store.sqlite.store import SQLiteStore
from router.cli.main import app


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
    first = CliRunner().invoke(
        app, ["export", str(out), "--config", str(config), "--format", "messages", "--tool", "weather.alerts"]
    )
    assert first.exit_code == 0, first.output
    card = json.loads((out / "dataset.json").read_text())
    assert (
        card["filters"]["server"] == "weather"
        and card["filters"]["tool"] == "alerts"
        and card["formats"] == ["messages"]
    )
    # A split without lines has no file.
    written = [path for path in card["files"]["messages"].values() if path is not None]
    exported = [json.loads(line) for path in written for line in (out / path).read_text().splitlines()]
    assert exported and {line["meta"]["tool"] for line in exported} == {"alerts"}
    again = CliRunner().invoke(app, ["export", str(out), "--config", str(config)])
    assert again.exit_code == 1 and "--overwrite" in again.output
    assert CliRunner().invoke(app, ["export", str(out), "--config", str(config), "--overwrite"]).exit_code == 0
    assert json.loads((out / "dataset.json").read_text())["formats"] == ["agentworldbench", "messages", "preference"]


def test_no_store_yet_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(app, ["export", str(tmp_path / "out"), "--config", str(write_config(tmp_path))])
    assert result.exit_code == 1 and "no records yet" in result.output


def divergences(path) -> list[float | None]:
    return [json.loads(line)["meta"]["divergence"] for line in path.read_text().splitlines()]


def hardest_first_order(values: list[float | None]) -> list[float | None]:
    """Divergence descending, lines without one last (a stable sort: ties keep their order)."""
    return sorted(values, key=lambda value: (value is None, -(value or 0.0)))


def test_hardest_first_orders_each_file_and_the_card_says_so(config, tmp_path):
    out = tmp_path / "hard"
    args = [
        "export",
        str(out),
        "--config",
        str(config),
        "--hardest-first",
        "--format",
        "messages",
        "--format",
        "preference",
    ]
    result = CliRunner().invoke(app, [*args, "--test-fraction", "0.3"])
    assert result.exit_code == 0, result.output
    card = json.loads((out / "dataset.json").read_text())
    assert card["order"]["by"] == "divergence" and card["order"]["without_divergence"] == "last"
    for name in ("messages", "preference"):
        for side in ("train", "test"):
            found = divergences(out / name / f"{side}.jsonl")
            assert found and found == hardest_first_order(found), (name, side, found)
    shadowed = [value for value in divergences(out / "messages" / "train.jsonl") if value is not None]
    # A real order, not a tie.
    assert len(set(shadowed)) > 2 and divergences(out / "messages" / "train.jsonl")[-1] is None
    assert not list(out.glob(".simroute-export-*"))  # the scratch files went


def test_hardest_first_keeps_the_filters(config, tmp_path):
    out = tmp_path / "hard"
    args = [
        "--hardest-first",
        "--format",
        "messages",
        "--min-divergence",
        "0.3",
        "--tool",
        "weather.forecast",
        "--test-fraction",
        "0",
    ]
    result = CliRunner().invoke(app, ["export", str(out), "--config", str(config), *args])
    assert result.exit_code == 0, result.output
    exported = [json.loads(line)["meta"] for line in (out / "messages" / "train.jsonl").read_text().splitlines()]
    found = [meta["divergence"] for meta in exported]
    assert found and found == sorted(found, reverse=True) and min(found) >= 0.3
    assert {meta["tool"] for meta in exported} == {"forecast"}
    assert json.loads((out / "dataset.json").read_text())["order"]["by"] == "divergence"


def test_without_hardest_first_the_card_gives_the_session_order(config, tmp_path):
    result = CliRunner().invoke(app, ["export", str(tmp_path / "out"), "--config", str(config), "--format", "messages"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "out" / "dataset.json").read_text())["order"]["by"] == "session"
