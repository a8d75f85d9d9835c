"""The fidelity view per sub-provenance of the simulated side, with no store column:
counted at write time from the record's JSON (SQLite's `sub_counts`: by the writer on
insert, by trigger on update and prune, once from the records on migration), and the
same figures from the records themselves (a session's view, Python over rows)."""

from __future__ import annotations

from dataclasses import replace

from calls import Call, Decision, Observation, Provenance, Route, Source
from records.record import Record
from records.store.dashboard_rows import fidelity_of
from records.store.protocol import RecordFilter
from records.store.sqlite import sub_counts
from records.store.sqlite.store import SQLiteStore
from records.sub_provenance import bounded_sub, shadow_sub

NOW = 1_800_000_000.0
DAY = RecordFilter(since=NOW - 86400)


def pair(n: int, command: str, sub: str | None, divergence: float | None, *, session: str = "s1") -> Record:
    """A shadowed shell call: the real side served, the simulated side made as `sub` says."""
    record = Record(
        Call("shell", "sh", "run", {"command": command}, session),
        Decision(Route.SHADOW, "mode", ""),
        Observation([{"type": "text", "text": "hi"}], Provenance.REAL),
        step=n,
        call_key=f"k{n}",
        id=f"{n:032x}",
        ts=NOW - 3000 + n,
        shadow=Observation([{"type": "text", "text": "hi"}], Provenance.SIM, source=Source(sub=sub) if sub else None),
        divergence=divergence,
        divergence_kind=None if divergence is None else ("none" if divergence == 0 else "content"),
        status="complete" if divergence is not None else "pending",
    )
    return record


def rounded(subs: dict) -> dict:
    return {sub: {k: round(v, 9) for k, v in figures.items()} for sub, figures in subs.items()}


def expected_subs() -> dict:
    return {
        "model": {"pairs": 2, "divergent": 2, "divergent_rate": 1.0, "mean_divergence": 0.7},
        "none": {"pairs": 1, "divergent": 0, "divergent_rate": 0.0, "mean_divergence": 0.0},
        "state": {"pairs": 3, "divergent": 0, "divergent_rate": 0.0, "mean_divergence": 0.0},
    }


async def filled(path) -> SQLiteStore:
    store = await SQLiteStore(path).open()
    states = [pair(n, "cat notes.txt", "state", 0.0) for n in range(3)]
    pending = pair(3, "python x.py", "model", None)  # its shadow work not done yet
    twice = pair(4, "python y.py", None, None)
    await store.upsert([r.to_json() for r in states])
    await store.upsert(
        [pending.to_json(), twice.to_json(), replace(twice, divergence=0.0, status="complete").to_json()]
    )
    # The pending record completed (the update trigger counts it), then a pair pruned.
    await store.upsert([replace(pending, divergence=0.6, divergence_kind="content", status="complete").to_json()])
    await store.upsert([pair(5, "python z.py", "model", 0.8).to_json(), pair(6, "git commit", "model", 0.9).to_json()])
    await store.writer.run(lambda db: db.execute("DELETE FROM records WHERE id = ?", (f"{6:032x}",)))
    return store


async def test_the_fidelity_view_counts_shadow_pairs_per_sub_alike_from_counts_and_from_records(tmp_path):
    store = await filled(tmp_path / "records.db")
    try:
        (row,) = await store.fidelity(DAY)  # whole minutes: the counts kept at write time
        assert row["shadow_pairs"] == 6 and rounded(row["subs"]) == expected_subs()
        (from_records,) = await store.fidelity(replace(DAY, session="s1"))  # a session's view: its records
        assert rounded(from_records["subs"]) == expected_subs()
        # Python over rows (Redis, a token's view)
        assert rounded(fidelity_of(await store.recent())[0]["subs"]) == expected_subs()
        (divergent,) = await store.fidelity(replace(DAY, divergent=True))
        assert rounded(divergent["subs"]) == {"model": expected_subs()["model"]}
    finally:
        await store.aclose()


async def test_a_file_of_schema_8_is_counted_once_from_its_records(tmp_path):
    path = tmp_path / "records.db"
    store = await filled(path)

    def as_schema_8(db):
        db.execute("DROP TABLE sub_counts")
        for name in ("records_sub_uncounted", "records_sub_recounted"):
            db.execute(f"DROP TRIGGER {name}")
        db.execute("PRAGMA user_version = 8")

    await store.writer.run(as_schema_8)
    await store.aclose()
    reader = await SQLiteStore(path, read_only=True).open()  # not migrated: the records answer
    try:
        assert not await reader.reader.run(sub_counts.exists)
        assert rounded((await reader.fidelity(DAY))[0]["subs"]) == expected_subs()
    finally:
        await reader.aclose()
    store = await SQLiteStore(path).open()  # the writer migrates: counted once from the records
    try:
        assert await store.reader.run(sub_counts.exists)
        assert rounded((await store.fidelity(DAY))[0]["subs"]) == expected_subs()
    finally:
        await store.aclose()


def test_a_rows_sub_and_its_bounded_metric_label():
    assert shadow_sub(pair(0, "ls", "state", 0.0).to_json()) == "state"
    assert shadow_sub(pair(0, "ls", None, 0.0).to_json()) == "none" and shadow_sub({"shadow": None}) == "none"
    assert shadow_sub({"shadow": {"source": {"sub": 3}}}) == "none"  # another type: not a sub
    assert [bounded_sub(s) for s in ("state", "model+state", None, "fork-7")] == [
        "state",
        "model+state",
        "none",
        "other",
    ]
