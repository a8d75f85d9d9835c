"""The dashboard's store queries: grouped in SQL, on indexes (query plans), and
what they return on a small known store."""

from __future__ import annotations

import sqlite3

import pytest

from calls import Call, Decision, Observation, Provenance, Route
from records.record import Record
from records.store.protocol import RecordFilter
from records.store.sqlite import dashboard as queries
from records.store.sqlite.store import SQLiteStore
from router.dashboard.routes import BadQuery, bucket_for, record_filter

NOW = 1_800_000_000.0


def plan(db: sqlite3.Connection, sql: str, params: list) -> str:
    return " | ".join(row[-1] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", params))


@pytest.fixture
async def store(tmp_path):
    store = await SQLiteStore(tmp_path / "records.db").open()
    rows = []
    for n in range(40):
        route = [Route.REAL, Route.SIM, Route.SHADOW, Route.REPLAY][n % 4]
        record = Record(
            Call("mcp", "s", f"t{n % 2}", {"n": n}, f"sess-{n // 10}"),
            Decision(route, "mode", ""),
            Observation(content=[], provenance=Provenance.SIM if route == Route.SIM else Provenance.REAL),
            step=n % 10,
            call_key=f"k{n}",
            ts=NOW - 3600 + n * 60,
        )
        if route == Route.SHADOW:
            record.divergence, record.divergence_kind = (0.6, "content") if n % 8 == 2 else (0.0, "none")
        rows.append(record.to_json())
    await store.upsert(rows)
    yield store
    await store.aclose()


async def test_the_overview_and_fidelity_queries_read_minute_counts_and_indexes(store):
    def check(db: sqlite3.Connection) -> None:
        for where in (
            RecordFilter(since=NOW - 86400),
            RecordFilter(since=NOW - 86400, channel="mcp", route="sim", divergent=True),
        ):
            first, end = queries.whole_minutes(where)
            for sql, params in (
                queries.overview_counts_sql(where, 60.0, first, end),
                queries.fidelity_counts_sql(where, first, end),
            ):
                text = plan(db, sql, params)  # the counts kept at write time, searched by minute
                assert "SEARCH minute_counts USING PRIMARY KEY (minute>?)" in text, text
            for sql, params in (queries.overview_sql(where, 60.0), queries.fidelity_sql(where)):
                text = plan(db, sql, params)  # a range's partial minutes: the records through the time index
                assert "SEARCH records USING INDEX records_by_ts (ts>?" in text, text
            text = plan(db, *queries.page_sql(where, before=None, after="x", limit=50))
            assert "SEARCH records USING INDEX records_by_ts (ts>?" in text and "SCAN" not in text, text
            text = plan(db, *queries.model_fidelity_sql(where, 5000))  # by model: the newest, bounded
            assert "SEARCH records USING INDEX records_by_ts (ts>?" in text and "SCAN" not in text, text
        session = RecordFilter(since=NOW - 86400, session="sess-1")
        assert queries.whole_minutes(session) is None  # a session's view reads its records
        text = plan(db, *queries.overview_sql(session, 60.0))
        assert "records_by_session" in text or "records_by_ts" in text, text
        assert "SCAN records" not in text, text

    await store.reader.run(check)


async def recount(store, where: RecordFilter, bucket_s: float):
    """The overview and fidelity table computed from the records alone (the reference)."""

    def work(db):
        overview = [
            {"bucket": b, "route": r, "channel": c, "provenance": p, "calls": n, "shadowed": s, "divergent": d or 0}
            for b, r, c, p, n, s, d in db.execute(*queries.overview_sql(where, bucket_s))
        ]
        fidelity = {
            (c, s, t): (n, pairs, round(total, 9), {k: v for k, v in zip(queries.KINDS, kinds, strict=False) if v})
            for c, s, t, n, pairs, total, *kinds in db.execute(*queries.fidelity_sql(where))
        }
        return sorted(overview, key=lambda r: (r["bucket"], r["route"], r["channel"], r["provenance"])), fidelity

    return await store.reader.run(work)


async def test_minute_counts_follow_every_upsert_replacement_and_prune(store):
    """Counts kept at write time equal a recount of the records after records are
    replaced (a pending record completed with its divergence; in one batch, a record
    inserted and completed, beside an update of an older one), marked interrupted and
    pruned, for ranges whose ends fall inside a minute."""
    pending = Record(
        Call("mcp", "s", "t0", {"n": 99}, "sess-9"),
        Decision(Route.SHADOW, "mode", ""),
        Observation(content=[], provenance=Provenance.REAL),
        step=0,
        call_key="k99",
        ts=NOW - 95.5,
        status="pending",
    )
    await store.upsert([pending.to_json()])
    pending.status, pending.divergence, pending.divergence_kind = "complete", 0.9, "structure"
    await store.upsert([pending.to_json()])  # replaces the row: its pending counts are taken back
    await store.prune(before_ts=NOW - 3000)
    orphan = Record(
        Call("mcp", "s", "t1", {"n": 98}, "sess-9"),
        Decision(Route.REAL, "mode", ""),
        Observation(content=[], provenance=Provenance.REAL),
        step=1,
        call_key="k98",
        ts=NOW - 30.2,
        status="started",
        owner="gone:1:1",
    )
    await store.upsert([orphan.to_json()])
    assert await store.interrupt_orphans(lambda owner: False) == 1  # an UPDATE of the status: recounted
    started = Record(
        Call("mcp", "s", "t1", {"n": 97}, "sess-9"),
        Decision(Route.SHADOW, "mode", ""),
        Observation(content=[], provenance=Provenance.REAL),
        step=2,
        call_key="k97",
        ts=NOW - 20.4,
        status="started",
    )
    batch = [started.to_json()]
    started.status, started.divergence, started.divergence_kind = "complete", 0.3, "content"
    pending.divergence, pending.divergence_kind = 0.0, "none"
    await store.upsert([*batch, started.to_json(), pending.to_json()])  # inserted then updated; an update alone

    async def same(where: RecordFilter, bucket_s: float) -> None:
        overview, fidelity = await recount(store, where, bucket_s)
        got = await store.overview(where, bucket_s=bucket_s)
        assert sorted(got, key=lambda r: (r["bucket"], r["route"], r["channel"], r["provenance"])) == overview
        got_fidelity = {
            (r["channel"], r["server"], r["tool"]): (
                r["calls"],
                r["shadow_pairs"],
                round((r["mean_divergence"] or 0) * r["shadow_pairs"], 9),
                r["kinds"],
            )
            for r in await store.fidelity(where)
        }
        assert got_fidelity == fidelity

    for where in (
        RecordFilter(since=NOW - 7200),
        RecordFilter(since=NOW - 3333.3, until=NOW - 61.7),
        RecordFilter(since=NOW - 7200, tool="t0", divergent=True),
        RecordFilter(since=NOW - 7200, route="shadow"),
    ):
        await same(where, 60.0)
        await same(where, 1800.0)
    totals = await store.aggregates()
    assert totals["total"] == await store.count() and totals["by_status"] == {
        "complete": await store.count() - 1,
        "interrupted": 1,
    }


async def test_an_old_store_gets_its_minute_counts_on_migration(tmp_path):
    import records.store.sqlite.store as sqlite_store

    path = tmp_path / "records.db"
    store = await SQLiteStore(path).open()
    for n in range(30):
        record = Record(
            Call("mcp", "s", "t", {"n": n}, "a"),
            Decision(Route.REAL, "mode", ""),
            Observation(content=[], provenance=Provenance.REAL),
            step=n,
            call_key=f"k{n}",
            ts=NOW - 600 + n * 10,
        )
        await store.upsert([record.to_json()])
    await store.aclose()
    db = sqlite3.connect(path)  # what a version-3 file looks like: no counts, no triggers
    db.executescript(
        "DROP TRIGGER IF EXISTS records_counted; DROP TRIGGER records_uncounted; DROP TRIGGER records_recounted;"
        " DROP TABLE minute_counts; PRAGMA user_version = 3;"
    )
    db.close()
    store = await SQLiteStore(path).open()
    try:
        assert sum(r["calls"] for r in await store.overview(RecordFilter(since=NOW - 3600), bucket_s=60.0)) == 30
        assert (
            await store.reader.run(lambda db: db.execute("PRAGMA user_version").fetchone()[0])
        ) == sqlite_store.SCHEMA_VERSION
    finally:
        await store.aclose()


async def test_a_version_5_store_loses_its_insert_trigger_and_counts_each_record_once(tmp_path):
    """Version 5 counted an insert by trigger; version 6 counts inserts in the writer.
    A migrated file must not keep the trigger (every insert would count twice)."""
    from records.store.sqlite import minute_counts

    path = tmp_path / "records.db"
    store = await SQLiteStore(path).open()
    await store.aclose()
    db = sqlite3.connect(path)  # what a version-5 file looks like
    db.executescript(
        f"CREATE TRIGGER records_counted AFTER INSERT ON records BEGIN {minute_counts.counts_of('NEW', '')} END; "
        "PRAGMA user_version = 5;"
    )
    db.close()
    store = await SQLiteStore(path).open()
    try:
        for n in range(3):
            record = Record(
                Call("mcp", "s", "t", {"n": n}, "a"),
                Decision(Route.REAL, "mode", ""),
                Observation(content=[], provenance=Provenance.REAL),
                step=n,
                call_key=f"k{n}",
                ts=NOW - 100 + n,
            )
            await store.upsert([record.to_json()])
        assert sum(r["calls"] for r in await store.overview(RecordFilter(since=NOW - 3600), bucket_s=60.0)) == 3
        triggers = await store.reader.run(
            lambda db: {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        )
        # The minute counts' triggers, and the per-sub pair counts' (schema 9).
        assert triggers == {"records_uncounted", "records_recounted", "records_sub_uncounted", "records_sub_recounted"}
    finally:
        await store.aclose()


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
