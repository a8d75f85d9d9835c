"""`simroute compare-models`' options: bad input gets a clear error before any model loads."""

from __future__ import annotations

import asyncio

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
        await fill_store(store, 20)
        await store.aclose()

    asyncio.run(fill())
    return write_config(tmp_path)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "x=/nonexistent/model.gguf"], "no such GGUF file"),
        (["--model", "a=http://h:1/v1", "--model", "a=http://h:2/v1"], "the same name"),
        (["--model", "http://h:1/v1", "--session", "s", "--test-split", "/nonexistent.jsonl"], "give one"),
        (["--model", "http://h:1/v1", "--test-split", "/nonexistent/test.jsonl"], "No such file"),
        (["--model", "http://h:1/v1", "--test-fraction", "2"], "--test-fraction"),
    ],
)
def test_bad_options_are_refused_with_the_reason(config, args, message):
    result = CliRunner().invoke(app, ["compare-models", "--config", str(config), *args])
    assert result.exit_code == 2 and message in result.output


def test_held_out_sessions_without_a_real_answer_are_a_clear_error(config):
    result = CliRunner().invoke(
        app, ["compare-models", "--config", str(config), "--model", "http://h:1/v1", "--session", "nobody"]
    )
    assert result.exit_code == 1 and "hold no call with a real answer" in result.output


def test_no_store_yet_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(
        app, ["compare-models", "--config", str(write_config(tmp_path)), "--model", "http://h:1/v1"]
    )
    assert result.exit_code == 1 and "no records yet" in result.output
