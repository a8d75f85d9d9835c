"""The upstream guard's figures on /metrics, read at scrape time from this process's
guard (router/addons/upstream_guard/guard.py): refusals by upstream and reason, real calls
in flight by upstream, and each breaker's state as this replica last saw it (with
Redis, another replica may have seen it change since: its next call here sees it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from records.shared_state.guard_slots import CLOSED, HALF_OPEN, OPEN
from router.addons.upstream_guard.guard import UpstreamGuard

BREAKER_STATES = (CLOSED, HALF_OPEN, OPEN)


class GuardMetrics(Collector):
    def __init__(self, guard: UpstreamGuard) -> None:
        self.guard = guard

    def collect(self) -> Iterator[Any]:
        guard = self.guard
        refusals = CounterMetricFamily(
            "simroute_upstream_refusals",
            "Real calls the upstream guard refused (never sent), by upstream and reason.",
            labels=("upstream", "reason"),
        )
        for (upstream, reason), count in sorted(guard.refusals.items()):
            refusals.add_metric((upstream, reason), count)
        yield refusals
        in_flight = GaugeMetricFamily(
            "simroute_upstream_in_flight", "Real calls this replica has in flight, by upstream.", labels=("upstream",)
        )
        for upstream, count in sorted(guard.in_flight.items()):
            in_flight.add_metric((upstream,), count)
        yield in_flight
        breaker = GaugeMetricFamily(
            "simroute_upstream_breaker",
            "Circuit breaker state as this replica last saw it: 1 for the state it is in (closed, half_open, open).",
            labels=("upstream", "state"),
        )
        for upstream, current in sorted(guard.breakers.items()):
            for state in BREAKER_STATES:
                breaker.add_metric((upstream, state), 1.0 if state == current else 0.0)
        yield breaker
        yield CounterMetricFamily(
            "simroute_upstream_guard_unavailable",
            "Guard checks the shared state (Redis) could not make: the call went unguarded.",
            value=guard.unavailable,
        )
