"""The dashboard's store queries: grouped in SQL, on indexes (query plans), and
what they return on a small known store."""

from __future__ import annotations

import sqlite3

import pytest

from router.dashboard.routes import BadQuery, bucket_for, record_filter
from router.types import Call, Decision, Observation, Provenance, Route
from shadow import sqlite_dashboard as queries
from shadow.records import Record
from shadow.sqlite_store import SQLiteStore
from shadow.store import RecordFilter

NOW = 1_800_000_000.0


def plan(db: sqlite3.Connection, sql: str, params: list) -> str:
    return " | ".join(row[-1] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", params))


@pytest.fixture
async def store(tmp_path):
    store = await SQLiteStore(tmp_path / "records.db").open()
    rows = []
    for n in range(40):
        route = [Route.REAL, Route.SIM, Route.SHADOW, Route.REPLAY][n % 4]
        record = Record(Call("mcp", "s", f"t{n % 2}", {"n": n}, f"sess-{n // 10}"), Decision(route, "mode", ""),
                        Observation(content=[], provenance=Provenance.SIM if route == Route.SIM else Provenance.REAL), step=n % 10, call_key=f"k{n}", ts=NOW - 3600 + n * 60)
        if route == Route.SHADOW:
            record.divergence, record.divergence_kind = (0.6, "content") if n % 8 == 2 else (0.0, "none")
        rows.append(record.to_json())
    await store.upsert(rows)
    yield store
    await store.aclose()


async def test_the_overview_and_fidelity_queries_read_a_time_range_through_an_index(store):
    def check(db: sqlite3.Connection) -> None:
        for where in (RecordFilter(since=NOW - 86400), RecordFilter(since=NOW - 86400, channel="mcp", route="sim", divergent=True)):
            for sql, params in (queries.overview_sql(where, 60.0), queries.fidelity_sql(where)):
                text = plan(db, sql, params)  # aggregates read the index alone, never the table
                assert "SEARCH records USING COVERING INDEX records_by_ts (ts>?" in text, text
            text = plan(db, *queries.page_sql(where, before=None, after="x", limit=50))
            assert "SEARCH records USING INDEX records_by_ts (ts>?" in text and "SCAN" not in text, text
        session = RecordFilter(since=NOW - 86400, session="sess-1")
        text = plan(db, *queries.overview_sql(session, 60.0))
        assert "records_by_session" in text or "records_by_ts" in text, text
        assert "SCAN records" not in text, text

    await store.reader.run(check)


async def test_aggregates_come_back_grouped(store):
    rows = await store.overview(RecordFilter(since=NOW - 7200), bucket_s=1800.0)
    assert sum(r["calls"] for r in rows) == 40
    assert sum(r["shadowed"] for r in rows) == 10 and sum(r["divergent"] for r in rows) == 5
    assert {r["route"] for r in rows} == {"real", "sim", "shadow", "replay"}
    fidelity = {r["tool"]: r for r in await store.fidelity(RecordFilter(since=NOW - 7200))}
    assert fidelity["t0"]["shadow_pairs"] == 10 and fidelity["t0"]["kinds"] == {"content": 5, "none": 5}
    assert fidelity["t0"]["mean_divergence"] == pytest.approx(0.3)
    assert fidelity["t1"]["shadow_pairs"] == 0 and fidelity["t1"]["mean_divergence"] is None


async def test_pages_follow_a_cursor_both_ways(store):
    where = RecordFilter(since=NOW - 7200)
    first = await store.page(where, limit=15)
    assert [r["ts"] for r in first] == sorted((r["ts"] for r in first), reverse=True) and len(first) == 15
    older = await store.page(where, before=first[-1]["id"], limit=100)
    assert len(older) == 25 and not {r["id"] for r in older} & {r["id"] for r in first}
    assert await store.page(where, after=first[0]["id"]) == []
    assert [r["id"] for r in await store.page(where, after=first[1]["id"])] == [first[0]["id"]]
    assert (await store.record(first[0]["id"]))["id"] == first[0]["id"] and await store.record("nope") is None
    assert len(await store.page(RecordFilter(since=NOW - 7200, session="sess-2"))) == 10
    assert len(await store.page(RecordFilter(since=NOW - 7200, divergent=True))) == 5


def test_filters_read_from_the_query_string():
    where = record_filter({"since": "100", "tool": "echo", "divergent": "1", "route": ""}, now=NOW)
    assert where == RecordFilter(since=100.0, tool="echo", divergent=True)
    assert record_filter({}, now=NOW).since == NOW - 86400  # the last 24 h by default
    with pytest.raises(BadQuery):
        record_filter({"since": "yesterday"}, now=NOW)
    assert bucket_for(RecordFilter(since=NOW - 86400), now=NOW) == 1440.0
    assert bucket_for(RecordFilter(since=NOW - 600), now=NOW) == 60.0
