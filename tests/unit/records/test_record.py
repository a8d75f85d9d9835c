"""Records with and without a source: one written before sources existed loads and is
written back unchanged; a source is stored once, in the observation, in SQLite's body."""

from __future__ import annotations

import json
import sqlite3

from kit.records import OLD_ROW, check_sources_stored, sourced_record

from records.record import Record
from records.store.sqlite.schema import COLUMNS
from records.store.sqlite.store import SQLiteStore


def test_a_record_written_before_sources_loads_without_one_and_is_written_back_unchanged():
    record = Record.from_json(json.loads(OLD_ROW))
    assert record.served.source is None and record.shadow is not None and record.shadow.source is None
    assert record.to_line() == OLD_ROW


def test_a_records_source_is_written_in_its_observation_only():
    row = sourced_record().to_json()
    assert row["observation"]["source"] == {"sub": "model", "model": "stub.gguf", "fork": "f-1"}
    assert "source" not in row
    assert Record.from_json(json.loads(sourced_record().to_line())).served.source == sourced_record().served.source


async def test_sources_round_trip_through_sqlite_in_the_body_with_no_column_of_their_own(tmp_path):
    store = await SQLiteStore(tmp_path / "records.db").open()
    try:
        await check_sources_stored(store)
    finally:
        await store.aclose()
    db = sqlite3.connect(tmp_path / "records.db")
    try:
        assert {row[1] for row in db.execute("PRAGMA table_info(records)")} == set(COLUMNS)
        (body,) = db.execute("SELECT body FROM records WHERE id = ?", (sourced_record().id,)).fetchone()
        assert json.loads(body)["observation"]["source"]["sub"] == "model"
    finally:
        db.close()
