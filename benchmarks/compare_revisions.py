"""One benchmark on two revisions of simroute, alternated in one session: a regression
check for a change that should cost nothing (a restructuring).

Each revision is checked out into its own temporary worktree (`git worktree add
--detach`); the benchmark runs there with that tree first on the import path (its
launched `simroute` processes too), alternating base, head, base, head… for
`--pairs` pairs, so both see the same machine load over time. Each run's results
file (`benchmarks/results/<name>.json` inside its worktree) gives the figures; for
each metric the script prints both revisions' medians over runs, the head/base
ratio and the spread of the runs (min–max), and says whether the medians are within
5 % or within the spread.

Usage: python benchmarks/compare_revisions.py --base REV [--head REV] [--pairs 2]
       [--head-arg ARG …] (--mcp-overhead | --episode-load) [-- extra arguments for the benchmark]

`--head-arg` passes an argument to the head's runs only: an option the base's
benchmark does not know yet that keeps the work alike (`--head-arg=--mcp-alignment
--head-arg=off` for episode_load against a revision without sequence-aligned replay).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The figures compared, by benchmark: its results file's metrics (substrings).
WATCHED = {
    "mcp_overhead": [
        "C/stdio median ms/call",
        "C/http median ms/call",
        "B/stdio median ms/call",
        "B/http median ms/call",
    ],
    "episode_load": [
        "step inside simroute p50",
        "step inside simroute p99",
        "serve process CPU per step",
        "per idle episode",
    ],
}


def worktree(revision: str, into: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(into), revision], check=True, capture_output=True
    )
    return into


def run_once(tree: Path, name: str, extra: list[str]) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run([sys.executable, f"benchmarks/{name}.py", *extra], cwd=tree, env=env, check=True)
    rows = json.loads((tree / "benchmarks" / "results" / f"{name}.json").read_text())["rows"]
    return {r["metric"]: float(r["value"]) for r in rows if any(watched in r["metric"] for watched in WATCHED[name])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True)
    parser.add_argument("--head", default="HEAD")
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--head-arg", action="append", default=[], help="an argument for the head's runs only")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--mcp-overhead", action="store_const", dest="name", const="mcp_overhead")
    which.add_argument("--episode-load", action="store_const", dest="name", const="episode_load")
    parser.add_argument("extra", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    extra = [a for a in options.extra if a != "--"]
    with tempfile.TemporaryDirectory(prefix="simroute-revisions-") as folder:
        trees = {
            "base": worktree(options.base, Path(folder) / "base"),
            "head": worktree(options.head, Path(folder) / "head"),
        }
        runs: dict[str, list[dict[str, float]]] = {"base": [], "head": []}
        try:
            for n in range(options.pairs):
                for side in ("base", "head") if n % 2 == 0 else ("head", "base"):  # alternate who goes first
                    print(
                        f"--- pair {n + 1}/{options.pairs}: {side} "
                        f"({options.base if side == 'base' else options.head})",
                        flush=True,
                    )
                    own = extra + options.head_arg if side == "head" else extra
                    runs[side].append(run_once(trees[side], options.name, own))
        finally:
            for tree in trees.values():
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], capture_output=True
                )
    print(
        f"\n{options.name}: {options.pairs} runs per revision, alternated; base {options.base}, head {options.head}\n"
    )
    print(f"{'metric':58} {'base':>9} {'head':>9} {'head/base':>10}  base range / head range")
    for metric in runs["base"][0]:
        base = [r[metric] for r in runs["base"]]
        head = [r[metric] for r in runs["head"]]
        b, h = statistics.median(base), statistics.median(head)
        ratio = h / b if b else float("nan")
        overlap = min(head) <= max(base) and min(base) <= max(head)
        verdict = "within 5%" if abs(ratio - 1) <= 0.05 else "within the runs' spread" if overlap else "OUTSIDE"
        spread = f"{min(base):.3f}-{max(base):.3f} / {min(head):.3f}-{max(head):.3f}"
        print(f"{metric[:58]:58} {b:9.3f} {h:9.3f} {ratio:10.3f}  {spread}  {verdict}")


if __name__ == "__main__":
    main()
