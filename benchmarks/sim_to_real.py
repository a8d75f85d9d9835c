"""Sim-to-real, end to end (examples/sim_to_real): success on the real API of a policy
trained only on replayed, perturbed episodes, against the untrained policy and one
trained on real episodes alone with the same budget, with the real requests each cost.

The real side is the example's catalogue API (paginated with a cursor, 429 with
Retry-After past 3 requests per second per client); every episode goes through
`simroute serve`'s REST front door (`http_request` steps). The policy is a Thompson-sampling
bandit over three strategies (ignore the cursor; follow it; follow it and honour
Retry-After). The replay-trained policy's cost is its recording: one real episode
reading each page three times. No world model is loaded: the training episodes are
replays under a seeded perturbation plan, so the stub-or-GGUF question does not arise.

Sanity (every run, smoke included; a failure exits non-zero): no episode had an infra
error, the replay training reached the real API not once beyond its recording, and the
replay-trained policy succeeds on real more often than the untrained one.

Usage: python benchmarks/sim_to_real.py [--budget 30] [--eval 20] [--smoke]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from _results import add_smoke_flag, row, write_results

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "sim_to_real"))

from run import Result, run, table

SMOKE_BUDGET, SMOKE_EVAL = 6, 4


def sanity(results: list[Result]) -> list[str]:
    """What makes the run's figures meaningless or the story false."""
    untrained, replayed, _ = results
    problems = [f"{r.policy}: infra error: {error}" for r in results for error in r.infra_errors]
    if replayed.training.real_requests or replayed.training.answers.get("real"):
        problems.append(f"training on replay reached the real API {replayed.training.real_requests} times")
    if not any(kind.startswith("perturbed") for kind in replayed.training.answers):
        problems.append("no training step was perturbed: the plan did not apply")
    if replayed.evaluation.success <= untrained.evaluation.success:
        problems.append(
            f"the replay-trained policy ({replayed.evaluation.success:.0%}) did not beat the untrained one "
            f"({untrained.evaluation.success:.0%}) on real"
        )
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=30, help="training episodes, for each way of training")
    parser.add_argument("--eval", type=int, default=20, help="real episodes each policy is judged on")
    add_smoke_flag(parser)
    options = parser.parse_args()
    if options.smoke:
        options.budget, options.eval = SMOKE_BUDGET, SMOKE_EVAL
    with tempfile.TemporaryDirectory(prefix="simroute-bench-") as folder:
        results = run(options.budget, options.eval, Path(folder))
    print()
    print(table(results))
    problems = sanity(results)
    for problem in problems:
        print(f"FAILED: {problem}")
    if problems:
        return 1
    if not options.smoke:
        write(results, options.budget)
    return 0


def write(results: list[Result], budget: int) -> None:
    rows = []
    for r in results:
        requests, limited = r.real_cost
        rows.append(
            row(
                f"success on real, {r.policy} ({r.evaluation.episodes} episodes)",
                r.evaluation.success * 100,
                "%",
                better="higher",
            )
        )
        if r.policy != "untrained":
            rows.append(
                row(f"real requests to train, {r.policy} ({budget} episodes)", requests, "requests", better="lower")
            )
            rows.append(row(f"429s provoked while training, {r.policy}", limited, "answers", better="lower"))
            rows.append(
                row(
                    f"training time, {r.policy} ({budget} episodes{', its recording included' if r.recording else ''})",
                    r.training_seconds,
                    "s",
                    better="lower",
                )
            )
    untrained = results[0].evaluation.success * 100
    rows[0]["baseline"] = None
    for entry in rows[1:]:
        if entry["metric"].startswith("success on real"):
            entry["baseline"] = f"the untrained policy, {untrained:.0f} %"
    write_results(
        __file__, "Sim-to-real: a policy trained on replayed, perturbed episodes, judged on the real API", rows
    )


if __name__ == "__main__":
    sys.exit(main())
