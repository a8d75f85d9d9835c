"""The dashboard shows an answer's source with no store column of its own: a record's
from its observation, the live figures' from this process's `simroute_call_sources`."""

from __future__ import annotations

import json

from kit.records import OLD_ROW, sourced_record

from router.auth import Tokens
from router.dashboard.metrics import CallMetrics, StoreTotals
from router.dashboard.routes import Dashboard
from shadow.store.sqlite.store import SQLiteStore

NOW = 1_800_000_100.0


async def test_records_carry_their_served_answers_source_and_the_overview_counts_them_by_sub(tmp_path):
    store = await SQLiteStore(tmp_path / "records.db").open()
    try:
        metrics = CallMetrics()
        dashboard = Dashboard(store=store, tokens=Tokens.of({}), metrics=metrics, totals=StoreTotals(store))
        sourced = sourced_record()
        await store.upsert([json.loads(OLD_ROW), sourced.to_json()])
        metrics.observe(sourced, stored=True)
        rows = (await dashboard.records({}, now=NOW, namespaces=None))["rows"]
        assert {row["session"]: row["source"] for row in rows} == {
            "new-a": {"sub": "model", "model": "stub.gguf", "fork": "f-1"},
            "old-a": None,
        }
        overview = await dashboard.overview({}, now=NOW, namespaces=None)
        assert overview["sources"] == {"sim/model": 1} and overview["perturbations"] == {}
        assert (await dashboard.overview({}, now=NOW, namespaces=("alice/",)))["sources"] == {}  # another namespace's calls
    finally:
        await store.aclose()
