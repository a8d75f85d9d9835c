"""`simroute judge`'s options: bad input gets a clear error before any judge is asked."""

from __future__ import annotations

import asyncio

import pytest
from kit.judge import judged_rows
from kit.launch import write_config
from typer.testing import CliRunner

from records.store.sqlite.store import SQLiteStore
from router.cli.main import app


@pytest.fixture
def config(tmp_path):
    async def fill():
        store = await SQLiteStore(tmp_path / "records.db").open()
        await store.upsert(judged_rows())
        await store.aclose()

    asyncio.run(fill())
    return write_config(tmp_path)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--endpoint", "127.0.0.1:8080"], "must be an http(s) URL"),
        (["--endpoint", "http://127.0.0.1:9/v1", "--limit", "0", "--controls", "0"], "nothing to judge"),
        (["--endpoint", "http://127.0.0.1:9/v1", "--since", "yesterday"], "expected a duration"),
        (["--endpoint", "http://127.0.0.1:9/v1", "--token", "a/b"], "without '/'"),
        (["--endpoint", "http://127.0.0.1:9/v1", "--deadline", "0"], "--deadline"),
        ([], "--endpoint"),
    ],
)
def test_bad_options_are_refused_with_the_reason(config, args, message):
    result = CliRunner().invoke(app, ["judge", "--config", str(config), *args])
    assert result.exit_code == 2 and message in result.output


def test_no_store_yet_is_a_clear_error(tmp_path):
    result = CliRunner().invoke(
        app, ["judge", "--config", str(write_config(tmp_path)), "--endpoint", "http://127.0.0.1:9/v1"]
    )
    assert result.exit_code == 1 and "no records yet" in result.output
