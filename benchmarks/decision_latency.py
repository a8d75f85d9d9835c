"""Latency of one routing decision through the default policy chain.

Ten rules (globs, `re:` patterns, nested argument paths) in front of the mode
policy; timed per decision with perf_counter_ns. Target: p50 <= 50 us.

Usage: python benchmarks/decision_latency.py [--iterations 100000]
"""

from __future__ import annotations

import argparse
import statistics
import time

from policies import default_policies, parse_rule
from policies.base import decide
from router.types import Call, Decision, Route, Session

RULES = [
    {"match": {"server": "prod-*", "tool": "re:^(delete|drop)_"}, "route": "deny"},
    {"match": {"tool": "write_*"}, "route": "sim"},
    {"match": {"arguments": {"path": "/etc/*"}}, "route": "deny"},
    {"match": {"arguments": {"options.force": True}}, "route": "deny"},
    {"match": {"server": "github", "tool": "create_*"}, "route": "sim"},
    {"match": {"tool": "re:search|lookup", "arguments": {"query": "re:^internal:"}}, "route": "real"},
    {"match": {"channel": "shell", "arguments": {"command": "re:^(rm|mkfs|dd) "}}, "route": "sim"},
    {"match": {"arguments": {"filters.0.field": "owner"}}, "route": "replay"},
    {"match": {"server": "time", "tool": "convert_time"}, "route": "replay"},
    {"match": {"server": "time", "tool": "get_current_time", "arguments": {"timezone": "Asia/*"}}, "route": "shadow"},
]


def measure(chain, call: Call, iterations: int) -> list[float]:
    session = Session("bench")
    fallback = Decision(Route.REAL, "default", "none")
    samples = []
    for _ in range(iterations):
        started = time.perf_counter_ns()
        decide(chain, call, session, fallback=fallback)
        samples.append((time.perf_counter_ns() - started) / 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=100_000)
    options = parser.parse_args()
    chain = default_policies(rules=[parse_rule(r, index=i) for i, r in enumerate(RULES)], mode=Route.REAL)
    cases = {
        "no rule matches (all 10 run)": Call("mcp", "time", "get_current_time", {"timezone": "Europe/Oslo", "filters": [{"field": "x"}]}, "bench"),
        "last rule matches": Call("mcp", "time", "get_current_time", {"timezone": "Asia/Tokyo"}, "bench"),
    }
    print(f"{options.iterations} decisions per case, {len(RULES)} rules + mode policy\n")
    print(f"{'case':32} {'p50 us':>8} {'p95 us':>8} {'p99 us':>8}")
    for label, call in cases.items():
        measure(chain, call, 1000)  # warm-up
        samples = measure(chain, call, options.iterations)
        q = statistics.quantiles(samples, n=100)
        print(f"{label:32} {statistics.median(samples):8.2f} {q[94]:8.2f} {q[98]:8.2f}")
    print("\ntarget: p50 <= 50 us")


if __name__ == "__main__":
    main()
