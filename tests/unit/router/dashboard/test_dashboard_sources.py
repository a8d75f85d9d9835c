"""The dashboard shows an answer's source with no store column of its own: a record's
from its observation, the live figures' from this process's `simroute_call_sources`;
the fidelity view and /metrics give shadow divergence per sub of the simulated side."""

from __future__ import annotations

import json

from kit.records import OLD_ROW, sourced_record
from prometheus_client.parser import text_string_to_metric_families

from calls import Call, Decision, Observation, Provenance, Route, Source
from records.record import Record
from records.store.sqlite.store import SQLiteStore
from router.auth import Tokens
from router.dashboard.metrics import CallMetrics, StoreTotals
from router.dashboard.routes import Dashboard

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
        assert (await dashboard.overview({}, now=NOW, namespaces=("alice/",)))[
            "sources"
        ] == {}  # another namespace's calls
    finally:
        await store.aclose()


async def test_the_fidelity_view_and_metrics_give_shadow_divergence_per_sub(tmp_path):
    store = await SQLiteStore(tmp_path / "records.db").open()
    try:
        metrics = CallMetrics()
        dashboard = Dashboard(store=store, tokens=Tokens.of({}), metrics=metrics, totals=StoreTotals(store))
        records = [shadowed(n, "cat notes.txt", "state", 0.0) for n in range(3)] + [
            shadowed(n, "git commit", "model", 0.8) for n in (3, 4)
        ]
        await store.upsert([r.to_json() for r in records])
        for record in records:
            metrics.observe(record, stored=True)
        (row,) = (await dashboard.fidelity({}, now=NOW, namespaces=None))["rows"]
        assert row["subs"] == {
            "model": {"pairs": 2, "divergent": 2, "divergent_rate": 1.0, "mean_divergence": 0.8},
            "state": {"pairs": 3, "divergent": 0, "divergent_rate": 0.0, "mean_divergence": 0.0},
        }
        text = metrics.exposition().decode()
        by_sub = {
            (s.labels["sub"], s.name): s.value
            for f in text_string_to_metric_families(text)
            if f.name == "simroute_divergence_by_sub"
            for s in f.samples
            if s.name.endswith(("_count", "_sum"))
        }
        assert by_sub == {
            ("state", "simroute_divergence_by_sub_count"): 3.0,
            ("state", "simroute_divergence_by_sub_sum"): 0.0,
            ("model", "simroute_divergence_by_sub_count"): 2.0,
            ("model", "simroute_divergence_by_sub_sum"): 1.6,
        }
        assert 'simroute_divergence_by_sub_bucket{channel="shell",le="0.0",sub="state"} 3.0' in text
    finally:
        await store.aclose()


def shadowed(n: int, command: str, sub: str, divergence: float) -> Record:
    """A shadowed shell call whose simulated side was made as `sub` says."""
    return Record(
        Call("shell", "sh", "run", {"command": command}, "s1"),
        Decision(Route.SHADOW, "mode", ""),
        Observation([{"type": "text", "text": "hi"}], Provenance.REAL),
        step=n,
        call_key=f"k{n}",
        id=f"{n:032x}",
        ts=NOW - 60,
        shadow=Observation([{"type": "text", "text": "hi"}], Provenance.SIM, source=Source(sub=sub)),
        divergence=divergence,
        divergence_kind="none" if divergence == 0 else "content",
    )
