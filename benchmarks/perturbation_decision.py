"""Cost of a perturbation decision on the hot path, and its reproducibility.

Per call, the engine's perturbation step (router/addons/perturbation/addon.py): the plan for
the call, its rules' `match`, the call numbers claimed in the session's state (in
process here), and the seeded decision (a BLAKE2b draw). Timed per call with
perf_counter_ns, interleaved with the routing decision alone (the no-plan baseline:
what every call pays without perturbations). Target: the step's p50 <= 10 us.

Then a seeded run of 200 calls, made twice in fresh sessions: the two decision
sequences' checksums must be identical (the script fails otherwise).

Usage: python benchmarks/perturbation_decision.py [--iterations 100000] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import statistics
import sys
import time

from _results import add_smoke_flag, row, write_results

from calls import Call, Decision, Route, Session
from policies.base import decide
from policies.chain import default_policies
from policies.perturbation import PlanConfig, compile_plan
from records.shared_state.session_state import LocalSessionState
from router.addons.perturbation.addon import Perturber
from router.engine.pending import Pending

PLAN = {
    "seed": 2026,
    "rules": [
        {"name": "writes-fail", "kind": "error", "probability": 0.2, "match": {"tool": "write_*"}},
        {
            "name": "search-limit",
            "kind": "rate_limit",
            "limit": 8,
            "window": 10,
            "match": {"tool": "re:search|lookup"},
            "scope": "tool",
        },
        {"name": "flaky", "kind": "error", "probability": 0.3},
        {
            "name": "slow",
            "kind": "latency",
            "delay_s": {"distribution": "lognormal", "median_s": 0.2, "sigma": 0.5},
            "every": 5,
        },
        {"name": "cut", "kind": "truncate", "keep": 0.5, "after_calls": 50, "probability": 0.1},
    ],
}
FALLBACK = Decision(Route.REAL, "default", "none")


def perturber() -> Perturber:
    return Perturber({"bench": compile_plan("bench", PlanConfig.model_validate(PLAN))}, default="bench")


def pending_of(call: Call, session: Session, decision: Decision, step: int) -> Pending:
    return Pending(call, session, decision, 1, None, call, step=step)  # type: ignore[arg-type]  # keys unused by the step


async def timed(iterations: int, warmup: int) -> tuple[list[float], list[float]]:
    """Microseconds of the routing decision alone and of the perturbation step, interleaved."""
    chain = default_policies(rules=[], mode=Route.REAL)
    plans, state = perturber(), LocalSessionState()
    session = Session("bench")
    call = Call("mcp", "search", "search_docs", {"query": "perturbation"}, "bench")
    baseline, step = [], []
    for i in range(iterations + warmup):
        pending = pending_of(call, session, FALLBACK, i)  # the engine builds it for every call anyway
        started = time.perf_counter_ns()
        pending.decision = decide(chain, call, session, fallback=FALLBACK)
        middle = time.perf_counter_ns()
        await plans.decide(pending, state)
        ended = time.perf_counter_ns()
        if i >= warmup:
            baseline.append((middle - started) / 1000)
            step.append((ended - middle) / 1000)
    return baseline, step


async def seeded_run(calls: int = 200) -> tuple[str, dict[str, int]]:
    """The checksum of a fresh session's perturbations over `calls` calls, and their counts."""
    plans, state, session = perturber(), LocalSessionState(), Session("run")
    tools = ["search_docs", "write_file", "read_file", "lookup_user"]
    decisions, counts = [], {}
    for n in range(calls):
        call = Call("mcp", "srv", tools[n % len(tools)], {"n": n}, "run")
        found = await plans.decide(pending_of(call, session, FALLBACK, n), state)
        decisions.append(found.meta() if found is not None else None)
        kind = found.kind if found is not None else "none"
        counts[kind] = counts.get(kind, 0) + 1
    return hashlib.sha256(json.dumps(decisions, sort_keys=True).encode()).hexdigest()[:16], counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=100_000)
    add_smoke_flag(parser)
    options = parser.parse_args()
    if options.smoke:
        options.iterations = 200
    baseline, step = asyncio.run(timed(options.iterations, warmup=min(1000, options.iterations)))
    q_base, q_step = statistics.quantiles(baseline, n=100), statistics.quantiles(step, n=100)
    p50_base, p50_step = statistics.median(baseline), statistics.median(step)
    print(
        f"{options.iterations} calls, a plan of {len(PLAN['rules'])} "
        "rules, interleaved with the routing decision alone\n"
    )
    print(f"{'':34} {'p50 us':>8} {'p99 us':>8}")
    print(f"{'routing decision (no plan)':34} {p50_base:8.2f} {q_base[98]:8.2f}")
    print(f"{'perturbation step':34} {p50_step:8.2f} {q_step[98]:8.2f}")
    print("\ntarget: perturbation step p50 <= 10 us")
    first, second = asyncio.run(seeded_run()), asyncio.run(seeded_run())
    print(f"\nseeded run of 200 calls, twice: checksum {first[0]} and {second[0]}; {first[1]}")
    if first != second:
        print("the two seeded runs differ: the decision is not reproducible", file=sys.stderr)
        sys.exit(1)
    rows = [
        row("perturbation step p50", p50_step, "us", target="<= 10", better="lower"),
        row("perturbation step p99", q_step[98], "us", better="lower"),
        row("routing decision p50, no plan (interleaved baseline)", p50_base, "us", better="lower"),
        row("seeded 200-call runs with identical checksums", 2.0, "runs", target="2", better="higher"),
    ]
    if not options.smoke:
        write_results(__file__, "Perturbation decision cost and reproducibility", rows)


if __name__ == "__main__":
    main()
