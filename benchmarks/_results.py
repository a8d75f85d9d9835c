"""The results file of a full benchmark run, and the smoke flag every benchmark takes.

A full run writes `benchmarks/results/<script-name>.json`: the figures it printed,
with what each is compared against and its target, so the docs' performance page
reads measured numbers instead of copies of them. The schema (the page's reader
relies on it exactly):

    {"benchmark": "<script name without .py>", "title": "...",
     "command": "python benchmarks/<script>.py <args>",
     "measured_at": "<ISO-8601 UTC>", "machine": "<cores, load average at start>",
     "rows": [{"metric": "...", "value": <number>, "unit": "...", "baseline": "..." | null,
               "target": "<= 1.2" | null, "better": "lower" | "higher" | null}]}

A smoke run (`--smoke`) uses tiny sizes so CI notices a benchmark that no longer
imports or runs; its figures mean nothing, so it judges no target and writes no file.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path
from typing import Literal

RESULTS = Path(__file__).resolve().parent / "results"
# Taken when the benchmark imports this module, i.e. before its own work loads the machine.
_LOAD_AT_START = os.getloadavg()

Better = Literal["lower", "higher"] | None


def add_smoke_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny sizes, to check that it runs; judges no target, writes no results file",
    )


def row(
    metric: str,
    value: float,
    unit: str,
    *,
    baseline: str | None = None,
    target: str | None = None,
    better: Better = None,
) -> dict:
    """One figure of a results file."""
    return {
        "metric": metric,
        "value": round(float(value), 6),
        "unit": unit,
        "baseline": baseline,
        "target": target,
        "better": better,
    }


def machine() -> str:
    load = " ".join(f"{x:.2f}" for x in _LOAD_AT_START)
    return f"{os.cpu_count()} cores, load average {load} (1, 5, 15 min) at start"


def write_results(script: str, title: str, rows: list[dict], *, part: str | None = None) -> Path:
    """Writes the results file of a full run of `script` (its `__file__`); returns its path.
    `part` names a run that measured a part of what the script measures (its results file
    is `<script-name>-<part>.json`, beside the whole run's)."""
    name = Path(script).stem
    command = " ".join(["python", f"benchmarks/{name}.py", *sys.argv[1:]])
    if part is not None:
        name = f"{name}-{part}"
    document = {
        "benchmark": name,
        "title": title,
        "command": command,
        "measured_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "rows": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    print(f"\nresults written to {path.relative_to(RESULTS.parent.parent)}")
    return path
