"""`simroute records` filters and `simroute diff`, on a store written by the SQLite store."""

import asyncio
import json
import time

import pytest
from typer.testing import CliRunner

from calls import Call, Decision, Observation, Provenance, Route, call_key
from records.record import Record
from records.store.queries import QueryError, parse_since, record_by_id
from records.store.sqlite.store import SQLiteStore
from router.cli.main import app
from shadow.compare.divergence import compare

NOW = time.time()


def answer(body, provenance):
    return Observation([{"type": "text", "text": json.dumps(body, indent=2)}], provenance, structured=body)


def record(tool, route, *, ts, real=None, sim=None):
    call = Call("mcp", "time", tool, {"timezone": "Asia/Tokyo"}, "s1")
    real = real or {"timezone": "Asia/Tokyo", "datetime": "2026-11-23T19:19:49+09:00"}
    rec = Record(
        call,
        Decision(Route(route), "mode", "test"),
        answer(real, Provenance.REAL),
        step=0,
        call_key=call_key("mcp", "time", tool, call.arguments),
        ts=ts,
    )
    if sim is not None:
        rec.shadow = answer(sim, Provenance.SIM)
        result = compare(rec.served, rec.shadow, channel="mcp")
        rec.divergence, rec.divergence_kind, rec.divergence_evidence = result.score, result.kind, result.evidence
    return rec


@pytest.fixture
def store_file(tmp_path):
    path = tmp_path / "records.db"
    rows = [
        record("get_current_time", "real", ts=NOW - 7200),
        record("convert_time", "real", ts=NOW - 60),
        record(
            "get_current_time",
            "shadow",
            ts=NOW - 30,
            sim={"timezone": "Asia/Tokyo", "datetime": "2026-11-23T19:30:00+09:00"},
        ),
        record(
            "get_current_time",
            "shadow",
            ts=NOW - 10,
            sim={"timezone": "Asia/Tokyo", "datetime": "2026-11-23T19:19:49+08:00"},
        ),
    ]

    async def fill():
        store = await SQLiteStore(path).open()
        await store.upsert([r.to_json() for r in rows])
        await store.aclose()

    asyncio.run(fill())
    (tmp_path / "simroute.yaml").write_text(
        json.dumps({"store": {"path": str(path)}, "shell": {"enabled": False}, "browser": {"enabled": False}})
    )
    return path


def tools(rows):
    return [(row["tool"], row["route"]) for row in rows]


def query(path, limit=None, **filters):
    async def run():
        store = await SQLiteStore(path, read_only=True).open()
        try:
            return await store.recent(limit=limit, **filters)
        finally:
            await store.aclose()

    return asyncio.run(run())


def test_filters(store_file):
    assert len(query(store_file)) == 4
    assert tools(query(store_file, route="shadow")) == [("get_current_time", "shadow")] * 2
    assert tools(query(store_file, server="time", tool="convert_time")) == [("convert_time", "real")]
    assert len(query(store_file, tool="get_current_time", since=NOW - 3600)) == 2
    divergent = query(store_file, divergent=True)
    assert [row["divergence_kind"] for row in divergent] == ["content"]  # the noise-only one is not divergent


def test_since_and_ids(store_file):
    assert parse_since("2h", now=1000.0 * 3600) == 998.0 * 3600
    assert parse_since("2026-11-23T00:00:00Z") == parse_since("2026-11-23")
    with pytest.raises(QueryError, match="--since"):
        parse_since("yesterday")
    newest = query(store_file, limit=1)[0]
    assert by_id(store_file, newest["id"][:12])["id"] == newest["id"]
    with pytest.raises(QueryError, match="no record"):
        by_id(store_file, "ffff")
    with pytest.raises(QueryError, match="hexadecimal"):
        by_id(store_file, "'; drop")


def by_id(path, prefix):
    async def run():
        store = await SQLiteStore(path, read_only=True).open()
        try:
            return await record_by_id(store, prefix)
        finally:
            await store.aclose()

    return asyncio.run(run())


def test_records_command_with_filters(store_file):
    config = str(store_file.parent / "simroute.yaml")
    result = CliRunner().invoke(app, ["records", "--config", config, "--divergent", "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert len(rows) == 1 and rows[0]["divergence_evidence"]["divergent"][0]["path"] == "$.result.datetime#offset"
    by_tool = CliRunner().invoke(
        app, ["records", "--config", config, "--tool", "get_current_time", "--since", "1h", "--json"]
    )
    assert by_tool.exit_code == 0, by_tool.output
    assert [json.loads(line)["route"] for line in by_tool.output.splitlines()] == [
        "shadow",
        "shadow",
    ]  # the 2-hour-old call left out
    bad = CliRunner().invoke(app, ["records", "--config", config, "--route", "simulated"])
    assert bad.exit_code != 0 and "--route" in bad.output


def test_diff_command_marks_divergent_and_masked(store_file):
    config = str(store_file.parent / "simroute.yaml")
    divergent = query(store_file, divergent=True)[0]
    result = CliRunner().invoke(app, ["diff", divergent["id"][:12], "--config", config], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "divergent paths" in result.output and "$.result.datetime#offset" in result.output
    assert "masked as noise: $.result.datetime#instant" in result.output
    assert "≠" in result.output and "+08:00" in result.output
    real_only = query(store_file, route="real")[0]
    missing = CliRunner().invoke(app, ["diff", real_only["id"], "--config", config])
    assert missing.exit_code == 1 and "no simulated side" in missing.output
