"""Prometheus metrics: what this process routed, and totals from the store.

Counted where records are written (`RecordLog.observers`): a call is counted
once, when its record first reaches a finished status (a perturbed one counted by
its perturbation's kind too, one whose served answer names a source by the
source's `sub` too); its divergence when the shadow comparison lands (possibly
later, in a second write of the record), by channel and by the simulated side's sub.
The world model's tokens and generation time are counted per completion
(`WorldModelSimulator.observers`), by engine and domain (the call's channel).
Live gauges (shadow queue, skips, spool) are read from the runtime at scrape
time. A process that routes nothing itself (`simroute dashboard`) reports the
store's totals through `StoreTotals`, refreshed at most every 5 seconds.
"""

from __future__ import annotations

import time
from collections import Counter as Counter_
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from records.record import Record
from records.store.protocol import StoreError
from records.sub_provenance import bounded_sub

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_UNFINISHED = frozenset({"started"})  # written ahead of the call: not served yet
_REMEMBERED_IDS = 65536  # records counted recently: a later write of the same record is not a new call
LATENCY_BUCKETS_S = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
DIVERGENCE_BUCKETS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0)
_ALL_TOKENS_PREFIX = "simroute_store_records"  # StoreTotals' families: every token's records together
GENERATION_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120)


class CallMetrics:
    """The counters and histograms of routed calls, in their own registry. With tokens
    (`namespaced`), the call metrics carry a `namespace` label (the token's name) and a
    token's scrape shows only its own namespaces' series (`exposition(namespaces)`)."""

    def __init__(self, *, namespaced: bool = False) -> None:
        self.registry = CollectorRegistry()
        self.namespaced = namespaced
        scope = ("namespace",) if namespaced else ()
        self.calls = Counter(
            "simroute_calls",
            "Routed calls, by channel, route, provenance and outcome.",
            ("channel", "route", "provenance", "outcome", *scope),
            registry=self.registry,
        )
        self.latency = Histogram(
            "simroute_call_latency_seconds",
            "Time to serve a call, per route.",
            ("route", *scope),
            buckets=LATENCY_BUCKETS_S,
            registry=self.registry,
        )
        self.divergence = Histogram(
            "simroute_divergence",
            "Divergence of shadowed calls (0 same, 1 unrelated), per channel.",
            ("channel", *scope),
            buckets=DIVERGENCE_BUCKETS,
            registry=self.registry,
        )
        # Apart from simroute_divergence, whose series stay as they were: the same pairs by the
        # simulated side's sub-provenance (`state`, `model`, …; any sub simroute does not set is
        # `other`, none at all `none`: a bounded label).
        self.divergence_by_sub = Histogram(
            "simroute_divergence_by_sub",
            "Divergence of shadowed calls (0 same, 1 unrelated), per channel and the simulated side's sub-provenance.",
            ("channel", "sub", *scope),
            buckets=DIVERGENCE_BUCKETS,
            registry=self.registry,
        )
        by_model = ("engine", "domain")
        self.prompt_tokens = Counter(
            "simroute_world_model_prompt_tokens",
            "Prompt tokens sent to the world model.",
            by_model,
            registry=self.registry,
        )
        self.evaluated_tokens = Counter(
            "simroute_world_model_evaluated_tokens",
            "Prompt tokens the world model evaluated (not reused from a cached prefix).",
            by_model,
            registry=self.registry,
        )
        self.completion_tokens = Counter(
            "simroute_world_model_completion_tokens",
            "Tokens the world model generated.",
            by_model,
            registry=self.registry,
        )
        self.generation = Histogram(
            "simroute_world_model_generation_seconds",
            "Time of one world-model completion.",
            by_model,
            buckets=GENERATION_BUCKETS_S,
            registry=self.registry,
        )
        # Apart from simroute_calls, whose series stay as they were: a served answer's source
        # (calls.Source) by its `sub`, a value simroute sets (a bounded label).
        self.sources = Counter(
            "simroute_call_sources",
            "Routed calls whose served answer names its source, by channel, provenance and the source's sub.",
            ("channel", "provenance", "sub", *scope),
            registry=self.registry,
        )
        self.perturbations = Counter(
            "simroute_perturbations",
            "Calls a perturbation plan faulted, delayed or changed, by channel and kind.",
            ("channel", "kind", *scope),
            registry=self.registry,
        )
        self.store_errors = Counter(
            "simroute_store_errors",
            "Record writes the store refused (the record went to the spool).",
            registry=self.registry,
        )
        self._counted: OrderedDict[str, bool] = OrderedDict()  # record id -> its divergence was counted

    def observe(self, record: Record, *, stored: bool) -> None:
        """Called after every record write (`stored`: in the store, else in the spool)."""
        if not stored:
            self.store_errors.inc()
        if record.status in _UNFINISHED and record.divergence is None:
            return
        divergence_counted = self._counted.get(record.id)
        scope = (_namespace(record.call.session_id),) if self.namespaced else ()
        if divergence_counted is None:
            outcome = "error" if record.served.is_error else record.status
            self.calls.labels(
                record.call.channel, str(record.decision.route), str(record.served.provenance), outcome, *scope
            ).inc()
            self.latency.labels(str(record.decision.route), *scope).observe(max(record.served.latency_s, 0.0))
            if record.served.source is not None and record.served.source.sub:
                self.sources.labels(
                    record.call.channel, str(record.served.provenance), record.served.source.sub, *scope
                ).inc()
            if record.perturbation is not None:
                self.perturbations.labels(record.call.channel, str(record.perturbation.get("kind")), *scope).inc()
            divergence_counted = False
        if record.divergence is not None and not divergence_counted:
            self.divergence.labels(record.call.channel, *scope).observe(record.divergence)
            sub = record.shadow.source.sub if record.shadow is not None and record.shadow.source is not None else None
            self.divergence_by_sub.labels(record.call.channel, bounded_sub(sub), *scope).observe(record.divergence)
            divergence_counted = True
        self._counted[record.id] = divergence_counted
        self._counted.move_to_end(record.id)
        while len(self._counted) > _REMEMBERED_IDS:
            self._counted.popitem(last=False)

    def completion_observer(self, engine: str) -> Callable[[str, Any], None]:
        """An observer for `WorldModelSimulator.observers`, labelled with `engine`."""

        def observe(domain: str, completion: Any) -> None:
            self.prompt_tokens.labels(engine, domain).inc(completion.prompt_tokens)
            self.evaluated_tokens.labels(engine, domain).inc(completion.evaluated_tokens)
            self.completion_tokens.labels(engine, domain).inc(completion.completion_tokens)
            self.generation.labels(engine, domain).observe(max(completion.latency_s, 0.0))

        return observe

    def add_collector(self, collector: Collector) -> None:
        self.registry.register(collector)

    def exposition(self, namespaces: tuple[str, ...] | None = None) -> bytes:
        """The text format; with `namespaces` (a token's view: session prefixes), only
        those namespaces' call series, and none of the store's totals (every token's)."""
        if namespaces is None:
            return generate_latest(self.registry)
        return generate_latest(_TokenView(self.registry, frozenset(prefix.rstrip("/") for prefix in namespaces)))


def _namespace(session_id: str) -> str:
    """The token name a namespaced session id starts with ('' for none)."""
    token, slash, _ = session_id.partition("/")
    return token if slash else ""


class _TokenView:
    """A registry as one token may read it: series of other namespaces left out, and
    the store's totals (counted over every token) too."""

    def __init__(self, registry: CollectorRegistry, names: frozenset[str]) -> None:
        self.registry, self.names = registry, names

    def collect(self) -> Iterator[Any]:
        for family in self.registry.collect():
            if family.name.startswith(_ALL_TOKENS_PREFIX):
                continue
            # Families collected anew per scrape: filtering them changes no stored metric.
            family.samples = [
                s for s in family.samples if "namespace" not in s.labels or s.labels["namespace"] in self.names
            ]
            yield family


class RuntimeGauges(Collector):
    """Gauges read at scrape time from live objects (no state kept here)."""

    def __init__(self, read: Callable[[], dict[str, float]]) -> None:
        self._read = read

    def collect(self) -> Iterator[Any]:
        values = self._read()
        yield GaugeMetricFamily(
            "simroute_shadow_queue_depth", "Shadow work queued or running.", value=values.get("queue_depth", 0)
        )
        yield CounterMetricFamily(
            "simroute_shadow_skipped", "Shadow work skipped because the queue was full.", value=values.get("skipped", 0)
        )
        yield GaugeMetricFamily(
            "simroute_spool_bytes",
            "Size of the record spool file (records waiting for the store).",
            value=values.get("spool_bytes", 0),
        )
        yield CounterMetricFamily(
            "simroute_spooled_records",
            "Records written to the spool instead of the store.",
            value=values.get("spooled", 0),
        )
        yield GaugeMetricFamily(
            "simroute_shell_pool_ready",
            "Started sandboxes waiting in the warm pool for a new session.",
            value=values.get("pool_ready", 0),
        )
        yield GaugeMetricFamily(
            "simroute_shell_sandboxes", "Sandboxes held by agent sessions.", value=values.get("sandboxes", 0)
        )
        yield GaugeMetricFamily(
            "simroute_shell_forks", "Forks of sessions' sandboxes open now.", value=values.get("forks", 0)
        )
        yield CounterMetricFamily(
            "simroute_shell_forks_made", "Forks of sessions' sandboxes made.", value=values.get("forks_made", 0)
        )
        yield CounterMetricFamily(
            "simroute_shell_forks_refused",
            "Sessions whose shell could not fork (too large, capped, failed).",
            value=values.get("forks_refused", 0),
        )
        yield GaugeMetricFamily(
            "simroute_mcp_forks", "Forks of MCP servers' local state open now.", value=values.get("mcp_forks", 0)
        )
        yield CounterMetricFamily(
            "simroute_mcp_forks_made", "Forks of MCP servers made.", value=values.get("mcp_forks_made", 0)
        )
        yield CounterMetricFamily(
            "simroute_mcp_forks_refused",
            "Sessions' MCP servers that could not fork (too large, capped, failed).",
            value=values.get("mcp_forks_refused", 0),
        )
        # The noise learner (shadow/noise_learner.py): what became of each pair of real answers it was offered.
        pairs = CounterMetricFamily(
            "simroute_noise_pairs",
            "Pairs of real answers offered to the noise learner, by outcome.",
            labels=["outcome"],
        )
        for outcome in ("learned", "unsettled", "dropped"):
            pairs.add_metric([outcome], values.get(f"noise_{outcome}", 0))
        yield pairs
        probes = CounterMetricFamily(
            "simroute_noise_probes",
            "Noise probes (a read-only call repeated off the path), by outcome.",
            labels=["outcome"],
        )
        for outcome in ("answered", "skipped", "failed"):
            probes.add_metric([outcome], values.get(f"probes_{outcome}", 0))
        yield probes


class StoreTotals(Collector):
    """The store's aggregates as gauges, for every process that shares it.
    `refresh` (async) is awaited before a scrape; it asks the store at most every
    `max_age_s`, so scrapes never load the store."""

    def __init__(self, store: Any, *, max_age_s: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.max_age_s = max_age_s
        self._clock = clock
        self._at: float | None = None
        self._totals: dict[str, Any] = {}
        self._pins: dict[tuple[str, str], int] = {}  # (server, "pinned" or a change's status) -> count
        self.errors = 0

    async def refresh(self) -> None:
        now = self._clock()
        if self._at is not None and now - self._at < self.max_age_s:
            return
        try:
            self._totals = await self.store.aggregates()
            self._pins = pin_counts(await self.store.pins(), await self.store.pin_changes())
        except StoreError:
            self.errors += 1  # reported as simroute_store_read_errors; the last totals stay
        self._at = now

    def collect(self) -> Iterator[Any]:
        yield GaugeMetricFamily("simroute_store_records", "Records in the store.", value=self._totals.get("total", 0))
        for column in ("channel", "route", "provenance", "status"):
            family = GaugeMetricFamily(
                f"simroute_store_records_by_{column}", f"Records in the store, by {column}.", labels=(column,)
            )
            for value, count in sorted(self._totals.get(f"by_{column}", {}).items()):
                family.add_metric((str(value),), count)
            yield family
        pinned = GaugeMetricFamily(
            "simroute_tool_pins", "Upstream tools whose definition is pinned, by server.", labels=("server",)
        )
        changes = GaugeMetricFamily(
            "simroute_tool_pin_changes",
            "Changes upstreams made to pinned tool definitions, by server and status (pending: not accepted yet).",
            labels=("server", "status"),
        )
        for (server, kind), count in sorted(self._pins.items()):
            if kind == "pinned":
                pinned.add_metric((server,), count)
                if (server, "pending") not in self._pins:  # 0 pending is a figure to alert on too
                    changes.add_metric((server, "pending"), 0)
            else:
                changes.add_metric((server, kind), count)
        yield pinned
        yield changes
        yield CounterMetricFamily("simroute_store_read_errors", "Store aggregate reads that failed.", value=self.errors)


def pin_counts(pins: list[dict[str, Any]], changes: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """(server, "pinned" or a change's status) -> how many."""
    counts: Counter_[tuple[str, str]] = Counter_()
    counts.update((pin["server"], "pinned") for pin in pins)
    counts.update((change["server"], change["status"]) for change in changes)
    return dict(counts)
