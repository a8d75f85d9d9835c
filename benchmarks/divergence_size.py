"""Time to compare large observations: the divergence metric at and over the size bound.

Cases: a JSON pair of about 1 MB (over the 256 KiB bound: digest + sampled paths),
a JSON pair just under the bound (compared whole), and a 16,000-character terminal
screen (200 lines). Each is compared by `shadow.compare.divergence.compare` and, as the
baseline in the same run (interleaved), by the first-cut metric it replaced (leaf
by leaf for JSON, character edit similarity for text), which has no bound.
Target: <= 50 ms at the size bound.

With --smoke: one round, a JSON pair just over the bound and a 2,000-character screen
(the first-cut text metric takes tens of seconds on the full-size screen).

Usage: python benchmarks/divergence_size.py [--rounds 5] [--smoke]
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import statistics
import time
import uuid
from typing import Any

from _results import add_smoke_flag, row, write_results

from backends.shell.screen import ShellResult
from calls import Observation, Provenance
from shadow.compare.divergence import SIZE_BOUND, compare

# --- the first-cut metric (the baseline) ----------------------------------------------


def first_cut_divergence(real: Observation, simulated: Observation) -> float:
    if real.is_error != simulated.is_error:
        return 1.0
    real_json, sim_json = real.structured, simulated.structured
    if real_json is not None and sim_json is not None and "output" not in real_json:
        return json_divergence(real_json, sim_json)
    return text_divergence(real.text, simulated.text)


def text_divergence(a: str, b: str) -> float:
    if a == b:
        return 0.0
    return round(1.0 - difflib.SequenceMatcher(None, a, b, autojunk=False).ratio(), 4)


def json_divergence(a: Any, b: Any) -> float:
    left, right = dict(_leaves(a)), dict(_leaves(b))
    paths = left.keys() | right.keys()
    total = 0.0
    for path in paths:
        if path not in left or path not in right:
            total += 1.0
        elif left[path] != right[path]:
            total += 0.5 if type(left[path]) is type(right[path]) else 1.0
    return round(total / max(1, len(paths)), 4)


def _leaves(value: Any, path: str = "$"):
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _leaves(child, f"{path}.{key}")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _leaves(child, f"{path}[{index}]")
    else:
        yield path, value


# --- inputs ----------------------------------------------------------------------------


def json_pair(target_chars: int, rng: random.Random) -> tuple[Observation, Observation]:
    rows, size = [], 2
    while size < target_chars:
        row = {
            "id": str(uuid.UUID(int=rng.getrandbits(128))),
            "name": f"customer {len(rows)}",
            "email": f"c{len(rows)}@example.test",
            "balance": round(rng.uniform(0, 10_000), 2),
            "created_at": f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z",
            "tags": ["gold", "eu"] if len(rows) % 3 else ["new"],
            "address": {"city": "Oslo", "zip": f"{rng.randint(1000, 9999)}"},
        }
        rows.append(row)
        size += len(json.dumps(row)) + 2
    real = {"items": rows, "count": len(rows), "request_id": str(uuid.uuid4())}
    sim_rows = [dict(row, created_at="2026-11-23T10:00:00Z") for row in rows]
    for row in sim_rows[::5]:
        row["name"] = "someone else"
    sim = {"items": sim_rows, "count": len(rows), "request_id": str(uuid.uuid4())}
    return _observation(real, Provenance.REAL), _observation(sim, Provenance.SIM)


def _observation(body: Any, provenance: Provenance) -> Observation:
    return Observation([{"type": "text", "text": json.dumps(body)}], provenance, structured=body)


def screen_pair(chars: int, rng: random.Random) -> tuple[Observation, Observation]:
    lines = []
    while sum(len(line) + 1 for line in lines) < chars:
        n = len(lines)
        lines.append(
            f"-rw-r--r-- 1 agent agent {rng.randint(100, 99999):6d} Nov 23 10:{n % 60:02d} file_{n:04d}.txt  built "
            f"in {rng.random():.2f}s"
        )
    real_text = "\n".join(lines)[:chars]
    sim_lines = real_text.split("\n")
    for index in range(0, len(sim_lines), 7):
        sim_lines[index] = sim_lines[index].replace("file_", "data_")
    real = ShellResult(real_text, 0, "/workspace")
    sim = ShellResult("\n".join(sim_lines), 0, "/workspace")
    return (
        Observation([{"type": "text", "text": real.text()}], Provenance.REAL, structured=real.structured()),
        Observation([{"type": "text", "text": sim.text()}], Provenance.SIM, structured=sim.structured()),
    )


# --- measurement -----------------------------------------------------------------------


def timed_ms(function, *args, **kwargs) -> tuple[float, Any]:
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return (time.perf_counter() - started) * 1000, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    add_smoke_flag(parser)
    options = parser.parse_args()
    over, screen = (1_000_000, 16_000) if not options.smoke else (SIZE_BOUND + 16 * 1024, 2_000)
    if options.smoke:
        options.rounds = 1
    rng = random.Random(13)
    cases = {
        f"JSON ~{over / 1e6:.2g} MB (over the bound)": ("mcp", *json_pair(over, rng)),
        f"JSON at the bound (~{SIZE_BOUND // 1024 - 6} KiB)": ("mcp", *json_pair(SIZE_BOUND - 6 * 1024, rng)),
        f"screen {screen:,} characters": ("shell", *screen_pair(screen, rng)),
    }
    print(f"{options.rounds} interleaved rounds per case; median ms\n")
    print(f"{'case':34} {'first cut ms':>12} {'compare ms':>11} {'ratio':>6}  result (score, kind, note)")
    rows = []
    for label, (channel, real, sim) in cases.items():
        baseline, current = [], []
        result = None
        for _ in range(options.rounds):
            baseline.append(timed_ms(first_cut_divergence, real, sim)[0])
            elapsed, result = timed_ms(compare, real, sim, channel=channel)
            current.append(elapsed)
        b, c = statistics.median(baseline), statistics.median(current)
        note = result.evidence["note"][:60]
        print(f"{label:34} {b:12.1f} {c:11.1f} {c / b:6.2f}  {result.score}, {result.kind}, {note!r}")
        first_cut = "the first-cut metric it replaced (no size bound), interleaved"
        at_bound = "<= 50" if label.startswith("JSON at the bound") else None
        rows.append(row(f"compare, {label}", c, "ms", target=at_bound, better="lower"))
        rows.append(row(f"first cut, {label}", b, "ms", better="lower"))
        rows.append(row(f"compare / first cut, {label}", c / b, "ratio", baseline=first_cut, better="lower"))
    print("\ntarget: <= 50 ms at the size bound; ratio = compare / first cut")
    if not options.smoke:
        write_results(
            __file__, "Time to compare large observations (the divergence metric at and over its size bound)", rows
        )


if __name__ == "__main__":
    main()
