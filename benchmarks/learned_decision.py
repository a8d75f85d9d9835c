"""Decision latency of the full policy chain with a learned model loaded.

The chain is the router's: the safety gate, ten rules that do not match, the
tunnel refusal, and `mode: learned` with a model trained here on generated
shadow records (both routes trained; `min_labels` 1, so every call is scored by
the derived scorer). Baseline, interleaved in the same run: scikit-learn's own
`predict_proba` of the same fitted model on one call (features already made).
Also interleaved: the same chain ending in `mode: real`, for the learned
router's own share. Targets: chain p50 <= 50 us, p99 <= 250 us.

Measured as the router runs: a warm-up pass first (caches filled, as after a
router's first calls), the garbage collector left on (the router does not turn it
off, so p99 includes its pauses), the three cases interleaved call by call so load
on the machine hits them alike; the load average is printed with the figures.

Usage: python benchmarks/learned_decision.py [--iterations 50000] [--warmup 2000] [--smoke]
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _results import add_smoke_flag, write_results
from _results import row as result_row
from decision_latency import RULES
from kit.learned import generate

from backends.replay import ReplayBackend
from calls import Call, Decision, Mode, Route, Session
from policies.base import decide
from policies.chain import default_policies
from policies.learned import LearnedModel, LearnedPolicy, LearnedSettings, RouteModel, StateBuilder
from policies.learned.features import CallFacts, call_features
from policies.learned.labels import labels_from_rows
from policies.learned.scorer import LinearScorer
from policies.learned.training import TrainingSettings, train
from policies.rules import parse_rule
from policies.safety import SafetyClassifier


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=50_000)
    parser.add_argument("--warmup", type=int, default=2_000)
    add_smoke_flag(parser)
    options = parser.parse_args()
    if options.smoke:
        options.iterations, options.warmup = 500, 50
    rows = generate(900)
    replay = ReplayBackend(None)  # type: ignore[arg-type]  # keys only: the router's replay keys, as it makes them per call
    for row in rows:
        row["replay_key"] = replay.keys(
            Call(row["channel"], row["server"], row["tool"], row["arguments"], row["session"])
        ).replay
    result = train(labels_from_rows(rows), TrainingSettings(cv_folds=3))
    model = LearnedModel(
        {
            route: RouteModel(LinearScorer.from_classifier(c), result.thresholds[route])
            for route, c in result.classifiers.items()
        },
        digest="bench",
    )
    builder = StateBuilder(max_divergence=0.2)
    builder.add(rows)
    policy = LearnedPolicy(
        LearnedSettings(min_labels=1, explore_rate=0.05),
        model=model,
        state=builder.snapshot(),
        replay_key_of=lambda call: replay.keys(call).replay,
    )
    rules = [parse_rule(r, index=i) for i, r in enumerate(RULES)]
    chain = default_policies(rules=rules, mode=Mode.LEARNED, classifier=SafetyClassifier(), learned=policy)
    # The same chain ending in mode: real.
    plain = default_policies(rules=rules, mode=Mode.REAL, classifier=SafetyClassifier())
    calls = [Call("mcp", "srv", "get_motto", {}, "b"), Call("mcp", "srv", "get_visits", {}, "b")] + [
        Call("mcp", "srv", "get_weather", {"city": city}, "b") for city in ("Oslo", "Rome", "Lima", "Cairo")
    ]
    classifier = result.classifiers["sim"]
    features = [
        call_features(
            CallFacts(
                c.channel, c.server, c.tool, c.arguments, "safe", 3, builder.labels.stats.get(f"mcp\x1fsrv\x1f{c.tool}")
            )
        )
        for c in calls
    ]
    fallback = Decision(Route.REAL, "default", "none")
    rng = random.Random(0)
    session = Session("bench")
    for n in range(options.warmup):  # not timed: the caches a serving router has filled
        session.steps = n
        decide(chain, calls[n % len(calls)], session, fallback=fallback)
        decide(plain, calls[n % len(calls)], session, fallback=fallback)
        if n % 100 == 0:
            classifier.predict_proba([features[n % len(calls)]])
    chain_us, plain_us, sklearn_us, routes = [], [], [], {}
    for n in range(options.iterations):
        i = rng.randrange(len(calls))
        session.steps = n
        started = time.perf_counter_ns()
        decision = decide(chain, calls[i], session, fallback=fallback)
        chain_us.append((time.perf_counter_ns() - started) / 1000)
        routes[str(decision.route)] = routes.get(str(decision.route), 0) + 1
        started = time.perf_counter_ns()
        decide(plain, calls[i], session, fallback=fallback)
        plain_us.append((time.perf_counter_ns() - started) / 1000)
        if n % 10 == 0:  # predict_proba is slow: sampled, interleaved
            started = time.perf_counter_ns()
            classifier.predict_proba([features[i]])
            sklearn_us.append((time.perf_counter_ns() - started) / 1000)
    chain_p50, chain_p99 = statistics.median(chain_us), percentile(chain_us, 0.99)
    sk_p50, sk_p99 = statistics.median(sklearn_us), percentile(sklearn_us, 0.99)
    print(f"{'case':58} {'p50 us':>9} {'p99 us':>9} {'n':>7}")
    print(
        f"{'full chain, mode learned (gate + 10 rules + derived scorer)':58} "
        f"{chain_p50:9.1f} {chain_p99:9.1f} {len(chain_us):7}"
    )
    print(
        f"{'same chain, mode real (no learned router)':58} {statistics.median(plain_us):9.1f} "
        f"{percentile(plain_us, 0.99):9.1f} {len(plain_us):7}"
    )
    print(
        f"{'scikit-learn predict_proba, one call (features made)':58} {sk_p50:9.1f} {sk_p99:9.1f} {len(sklearn_us):7}"
    )
    print(f"chain / predict_proba at p50: {chain_p50 / sk_p50:.3f}; routes decided: {routes}")
    print(
        f"load average (1, 5, 15 min): {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs; gc "
        f"{'on' if gc.isenabled() else 'off'}"
    )
    if options.smoke:
        print("targets: p50 <= 50 us, p99 <= 250 us (not judged in a smoke run)")
        return
    print(
        f"targets: p50 <= 50 us {'met' if chain_p50 <= 50 else 'MISSED'}, p99 <= 250 us "
        f"{'met' if chain_p99 <= 250 else 'MISSED'}"
    )
    plain_p50 = statistics.median(plain_us)
    predict = "scikit-learn predict_proba of the same model, one call, interleaved"
    write_results(
        __file__,
        "Decision latency of the full policy chain with a learned model loaded",
        [
            result_row("full chain, mode learned, p50", chain_p50, "us", target="<= 50", better="lower"),
            result_row("full chain, mode learned, p99", chain_p99, "us", target="<= 250", better="lower"),
            result_row("same chain, mode real, p50", plain_p50, "us", better="lower"),
            result_row("same chain, mode real, p99", percentile(plain_us, 0.99), "us", better="lower"),
            result_row("scikit-learn predict_proba, one call, p50", sk_p50, "us", better="lower"),
            result_row("scikit-learn predict_proba, one call, p99", sk_p99, "us", better="lower"),
            result_row("chain / predict_proba at p50", chain_p50 / sk_p50, "ratio", baseline=predict, better="lower"),
            result_row(
                "mode learned / mode real at p50",
                chain_p50 / plain_p50,
                "ratio",
                baseline="the same chain ending in mode: real, interleaved",
                better="lower",
            ),
        ],
    )


if __name__ == "__main__":
    main()
