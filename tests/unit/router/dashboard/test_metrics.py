"""Counting calls where records are written: once per call, divergence once, whatever
how many times a record is rewritten (written ahead, pending, completed)."""

from __future__ import annotations

from dataclasses import replace

from prometheus_client.parser import text_string_to_metric_families

from calls import Call, Decision, Observation, Provenance, Route, Source
from records.record import Record
from records.store.protocol import StoreError
from router.dashboard.metrics import CallMetrics, RuntimeGauges, StoreTotals


def samples(metrics: CallMetrics) -> dict:
    text = metrics.exposition().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


def record(status: str, **changes) -> Record:
    base = Record(
        Call("mcp", "time", "now", {}, "s1"),
        Decision(Route.SHADOW, "mode", ""),
        Observation(content=[], provenance=Provenance.REAL, latency_s=0.2),
        step=1,
        call_key="k",
        id="r1",
        status=status,
    )
    return replace(base, **changes)


def test_a_call_is_counted_once_across_its_writes_and_its_divergence_when_it_lands():
    metrics = CallMetrics()
    metrics.observe(record("started"), stored=True)  # written ahead: not served yet
    assert (
        "simroute_calls_total",
        (("channel", "mcp"), ("outcome", "pending"), ("provenance", "real"), ("route", "shadow")),
    ) not in samples(metrics)
    metrics.observe(record("pending"), stored=True)
    metrics.observe(record("complete", divergence=0.4), stored=False)
    metrics.observe(record("complete", divergence=0.4), stored=True)
    got = samples(metrics)
    assert (
        got[
            (
                "simroute_calls_total",
                (("channel", "mcp"), ("outcome", "pending"), ("provenance", "real"), ("route", "shadow")),
            )
        ]
        == 1
    )
    assert got[("simroute_call_latency_seconds_count", (("route", "shadow"),))] == 1
    assert got[("simroute_divergence_count", (("channel", "mcp"),))] == 1
    assert got[("simroute_divergence_bucket", (("channel", "mcp"), ("le", "0.5")))] == 1
    assert got[("simroute_divergence_bucket", (("channel", "mcp"), ("le", "0.3")))] == 0
    assert got[("simroute_store_errors_total", ())] == 1


def test_errors_are_their_own_outcome():
    metrics = CallMetrics()
    metrics.observe(record("complete", id="r2", served=Observation.error("boom", Provenance.REAL)), stored=True)
    assert (
        samples(metrics)[
            (
                "simroute_calls_total",
                (("channel", "mcp"), ("outcome", "error"), ("provenance", "real"), ("route", "shadow")),
            )
        ]
        == 1
    )


class Store:
    def __init__(self) -> None:
        self.asked = 0
        self.fail = False

    async def aggregates(self):
        self.asked += 1
        if self.fail:
            raise StoreError("gone")
        return {"total": 7, "by_route": {"real": 5, "sim": 2}}

    async def pins(self):
        return [
            {"server": "dict", "tool": "lookup"},
            {"server": "dict", "tool": "define"},
            {"server": "time", "tool": "now"},
        ]

    async def pin_changes(self):
        return [{"server": "dict", "status": "accepted"}, {"server": "dict", "status": "pending"}]


async def test_store_totals_are_cached_for_five_seconds_and_survive_a_failed_read():
    clock = [100.0]
    store = Store()
    totals = StoreTotals(store, clock=lambda: clock[0])
    metrics = CallMetrics()
    metrics.add_collector(totals)
    metrics.add_collector(RuntimeGauges(lambda: {"queue_depth": 3, "skipped": 2, "spool_bytes": 10}))
    await totals.refresh()
    clock[0] += 4.9
    await totals.refresh()
    assert store.asked == 1
    clock[0] += 0.2
    store.fail = True
    await totals.refresh()
    got = samples(metrics)
    assert store.asked == 2 and got[("simroute_store_read_errors_total", ())] == 1
    assert (
        got[("simroute_store_records", ())] == 7 and got[("simroute_store_records_by_route", (("route", "sim"),))] == 2
    )
    assert got[("simroute_shadow_queue_depth", ())] == 3 and got[("simroute_shadow_skipped_total", ())] == 2
    assert (
        got[("simroute_tool_pins", (("server", "dict"),))] == 2
        and got[("simroute_tool_pins", (("server", "time"),))] == 1
    )
    assert got[("simroute_tool_pin_changes", (("server", "dict"), ("status", "pending")))] == 1
    assert got[("simroute_tool_pin_changes", (("server", "dict"), ("status", "accepted")))] == 1
    assert got[("simroute_tool_pin_changes", (("server", "time"), ("status", "pending")))] == 0


def test_runtime_gauges_expose_the_spool_size_and_spooled_records_they_are_fed():
    live = {"queue_depth": 0, "skipped": 0, "spool_bytes": 4096, "spooled": 3}
    metrics = CallMetrics()
    metrics.add_collector(RuntimeGauges(lambda: live))
    got = samples(metrics)
    assert got[("simroute_spool_bytes", ())] == 4096 and got[("simroute_spooled_records_total", ())] == 3
    live["spool_bytes"] = 0  # read at scrape time: a flushed spool shows as empty at the next scrape
    assert samples(metrics)[("simroute_spool_bytes", ())] == 0


def test_a_perturbed_call_is_counted_once_by_its_kind():
    metrics = CallMetrics()
    perturbed = {"kind": "mislead", "rule": "p:lies", "seed": 1, "n": 1}
    metrics.observe(record("pending", perturbation=perturbed), stored=True)
    metrics.observe(record("complete", perturbation=perturbed), stored=True)
    metrics.observe(record("complete", id="r2"), stored=True)  # not perturbed
    assert samples(metrics)[("simroute_perturbations_total", (("channel", "mcp"), ("kind", "mislead")))] == 1


def test_a_served_answers_source_is_counted_by_its_sub_beside_the_unchanged_call_series():
    metrics = CallMetrics()
    simulated = Observation(content=[], provenance=Provenance.SIM, source=Source(sub="model", model="m.gguf"))
    metrics.observe(record("complete", decision=Decision(Route.SIM, "mode", ""), served=simulated), stored=True)
    metrics.observe(record("complete", id="r2"), stored=True)  # a real answer: no source
    got = samples(metrics)
    assert got[("simroute_call_sources_total", (("channel", "mcp"), ("provenance", "sim"), ("sub", "model")))] == 1
    assert [key for key in got if key[0] == "simroute_call_sources_total"] == [
        ("simroute_call_sources_total", (("channel", "mcp"), ("provenance", "sim"), ("sub", "model")))
    ]
    assert (
        got[
            (
                "simroute_calls_total",
                (("channel", "mcp"), ("outcome", "complete"), ("provenance", "sim"), ("route", "sim")),
            )
        ]
        == 1
    )
