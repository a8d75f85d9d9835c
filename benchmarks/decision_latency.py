"""Latency of one routing decision through the default policy chain.

Ten rules (globs, `re:` patterns, nested argument paths) in front of the mode
policy; timed per decision with perf_counter_ns. Target: p50 <= 50 us.

Then shell calls through the chain with the safety gate (tree-sitter-bash parse
of the command) and without it, interleaved in the same run: a repeated
command (parse and verdict cached) and a new command every time.

Usage: python benchmarks/decision_latency.py [--iterations 100000] [--smoke]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time

from _results import add_smoke_flag, row, write_results
from _timing import paired_timings

from calls import Call, Decision, Route, Session
from policies.base import decide
from policies.chain import default_policies
from policies.rules import parse_rule
from policies.safety import SafetyClassifier
from policies.safety.shell import classify_shell
from policies.safety.shell_parse import parse_shell

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
    add_smoke_flag(parser)
    options = parser.parse_args()
    if options.smoke:
        options.iterations = 200
    chain = default_policies(rules=[parse_rule(r, index=i) for i, r in enumerate(RULES)], mode=Route.REAL)
    cases = {
        "no rule matches (all 10 run)": Call(
            "mcp", "time", "get_current_time", {"timezone": "Europe/Oslo", "filters": [{"field": "x"}]}, "bench"
        ),
        "last rule matches": Call("mcp", "time", "get_current_time", {"timezone": "Asia/Tokyo"}, "bench"),
    }
    print(f"{options.iterations} decisions per case, {len(RULES)} rules + mode policy\n")
    print(f"{'case':32} {'p50 us':>8} {'p95 us':>8} {'p99 us':>8}")
    rows = []
    for label, call in cases.items():
        measure(chain, call, 1000)  # warm-up
        samples = measure(chain, call, options.iterations)
        q = statistics.quantiles(samples, n=100)
        print(f"{label:32} {statistics.median(samples):8.2f} {q[94]:8.2f} {q[98]:8.2f}")
        rows.append(row(f"decision p50, {label}", statistics.median(samples), "us", target="<= 50", better="lower"))
        rows.append(row(f"decision p99, {label}", q[98], "us", better="lower"))
    print("\ntarget: p50 <= 50 us")
    rows += compare_shell_parser(options.iterations // 10)
    if not options.smoke:
        write_results(__file__, "Routing decision latency through the default policy chain", rows)


def compare_shell_parser(iterations: int) -> list[dict]:
    """Shell calls through the chain with and without the safety gate; returns the results rows."""
    rules = [parse_rule(r, index=i) for i, r in enumerate(RULES)]
    without = default_policies(rules=rules, mode=Route.REAL)
    with_gate = default_policies(rules=rules, mode=Route.REAL, classifier=SafetyClassifier())
    command = "cd /workspace && git diff --stat | tail -1 && grep -rn 'TODO' src | wc -l"
    repeated = itertools.repeat(command)
    fresh = (f"{command} # {n}" for n in itertools.count())
    print(
        f"\nshell calls, {iterations} per case, chain with and without the safety gate's shell parser (interleaved)\n"
    )
    print(f"{'case':34} {'without p50':>12} {'with p50':>9} {'with p99':>9} {'ratio':>7}")
    parse_shell.cache_clear()
    classify_shell.cache_clear()
    rows = []
    fallback = Decision(Route.REAL, "default", "none")
    for label, commands in (("repeated command (cached)", repeated), ("new command each time", fresh)):
        calls = (Call("shell", "shell", "shell_exec", {"command": command}, "bench") for command in commands)
        plain, gated = paired_timings(
            calls,
            lambda call: decide(without, call, Session("bench"), fallback=fallback),
            lambda call: decide(with_gate, call, Session("bench"), fallback=fallback),
            iterations=iterations,
            warmup=100,
        )
        q = statistics.quantiles(gated, n=100)
        p50_plain, p50_gated = statistics.median(plain), statistics.median(gated)
        print(f"{label:34} {p50_plain:12.2f} {p50_gated:9.2f} {q[98]:9.2f} {p50_gated / p50_plain:6.1f}x")
        baseline = "the same chain without the safety gate, interleaved"
        rows.append(
            row(f"shell call p50 with the safety gate, {label}", p50_gated, "us", baseline=baseline, better="lower")
        )
        rows.append(row(f"shell call p50 without the safety gate, {label}", p50_plain, "us", better="lower"))
        rows.append(
            row(
                f"with / without the safety gate at p50, {label}",
                p50_gated / p50_plain,
                "ratio",
                baseline=baseline,
                better="lower",
            )
        )
    return rows


if __name__ == "__main__":
    main()
