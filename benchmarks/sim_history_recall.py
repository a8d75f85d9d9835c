"""Does a simulated shell keep the world consistent? Issue 37's workload through the
engine's sim route, as an RL loop drives it: `simroute serve` (the bundled GGUF world
model loaded, the shell channel on), one REST episode per workload episode with
`route: sim`, `channels: [shell]` and the episode's initial `files`, its 20 command
lines stepped one by one. Each answer (output and exit code, `ls -l` dates masked)
is compared with what the same lines print in the project's sandbox image through
the shell channel's real side, from the same initial files (the ground truth,
benchmarks/_shell_workload.py; drawn with a fixed seed, committed before the state's
executor).

Reported: steps equal to the sandbox (target >= 95%), per sub-provenance of the answer
(`state`: from the session's world state, no model call; `model+state`, `model`: the
world model wrote it), the time inside simroute of a step answered from state (p50
<= 2 ms, p99 <= 20 ms) and the client's REST round trip of a simulated step (p50 <= 50 ms).

Usage: python benchmarks/sim_history_recall.py [--episodes 10] [--model PATH] [--smoke]
       (--smoke: one episode of five steps, the instant model stub instead of the GGUF)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sqlite3
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx2 as httpx
from _episodes import load_average, model_stub, percentile, serving, write_config
from _results import add_smoke_flag, row, write_results
from _shell_workload import Episode, draw_episodes, mask_dates, run_in_sandbox, same_answer

TARGET_EQUAL = 0.95


async def simulated(http: httpx.AsyncClient, episode: Episode) -> list[dict]:
    """Each step's answer, its source, the time inside simroute and the client's round trip."""
    answer = await http.post(
        "/episodes", json={"options": {"route": "sim", "channels": ["shell"], "files": episode.files}}
    )
    answer.raise_for_status()
    episode_id, steps = answer.json()["episode_id"], []
    try:
        for command in episode.commands:
            started = time.perf_counter()
            stepped = await http.post(
                f"/episodes/{episode_id}/step",
                json={"type": "call_tool", "tool_name": "shell_exec", "arguments": {"command": command}},
            )
            round_trip = (time.perf_counter() - started) * 1000
            stepped.raise_for_status()
            body = stepped.json()
            result = body["observation"]["result"]
            structured = result.get("structuredContent") or {}
            meta = (result.get("_meta") or {}).get("simroute") or {}
            steps.append(
                {
                    "answer": (str(structured.get("output", "")), structured.get("exit_code")),
                    "sub": (meta.get("source") or {}).get("sub") or meta.get("provenance"),
                    "inside_ms": float(body["info"].get("simroute_ms") or 0.0),
                    "round_trip_ms": round_trip,
                }
            )
    finally:
        await http.delete(f"/episodes/{episode_id}")
    return steps


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--model", default=None, help="a GGUF file (default: the bundled model)")
    parser.add_argument("--show", action="store_true", help="print each unequal step")
    add_smoke_flag(parser)
    options = parser.parse_args()
    episodes = draw_episodes()[: options.episodes]
    if options.smoke:
        episodes = [Episode(e.index, e.files, e.commands[:5]) for e in episodes[:1]]
    truths = [await run_in_sandbox(episode) for episode in episodes]
    with tempfile.TemporaryDirectory(prefix="simroute-bench-") as folder, contextlib.ExitStack() as stack:
        workdir = Path(folder)
        world_model = {"model_path": options.model} if options.model else {}  # {}: the bundled GGUF
        if options.smoke:
            world_model = stack.enter_context(model_stub()).world_model()
        config = write_config(workdir, mode="sim", shell={"enabled": True, "pool_size": 0}, world_model=world_model)
        served = stack.enter_context(serving(config, workdir / "serve.log"))
        async with httpx.AsyncClient(base_url=served.base_url, timeout=600) as http:
            measured = [await simulated(http, episode) for episode in episodes]
        answer_ms = state_answer_ms(workdir / "records.db")
    report(options, episodes, truths, measured, answer_ms)


def state_answer_ms(store: Path) -> list[float]:
    """The latency each answer from state recorded: the sim route's own work for it."""
    with sqlite3.connect(store) as db:
        bodies = [
            json.loads(body)
            for (body,) in db.execute("SELECT body FROM records WHERE channel = 'shell' AND provenance = 'sim'")
        ]
    return [float(b["latency_ms"]) for b in bodies if (b["observation"].get("source") or {}).get("sub") == "state"]


def report(
    options: argparse.Namespace,
    episodes: list[Episode],
    truths: list[list],
    measured: list[list[dict]],
    answer_ms: list[float],
) -> None:
    equal, by_sub, state_ms, trips = 0, Counter(), [], []
    for episode, truth, steps in zip(episodes, truths, measured, strict=True):
        for command, expected, step in zip(episode.commands, truth, steps, strict=True):
            same = same_answer(step["answer"], expected)
            equal += same
            by_sub[(step["sub"], same)] += 1
            trips.append(step["round_trip_ms"])
            if step["sub"] == "state":
                state_ms.append(step["inside_ms"])
            if not same and options.show:
                print(f"--- episode {episode.index}: {command!r} ({step['sub']})")
                print(f"sandbox: {mask_dates(expected[0])!r} exit {expected[1]}")
                print(f"served:  {mask_dates(step['answer'][0])!r} exit {step['answer'][1]}")
    total = sum(len(steps) for steps in measured)
    share = equal / total
    print(
        f"\n{total} simulated steps in {len(episodes)} episodes, "
        f"the bundled model loaded; load average {load_average()}"
    )
    print(f"equal to the sandbox: {equal}/{total} = {share:.3f} (target >= {TARGET_EQUAL})")
    for sub in sorted({sub for sub, _ in by_sub}, key=str):
        print(f"  answered by {sub}: {by_sub[(sub, True)] + by_sub[(sub, False)]} steps, {by_sub[(sub, True)]} equal")
    if answer_ms:
        print(
            f"an answer from state (the sim route's work): p50 {statistics.median(answer_ms):.3f} ms, p99 "
            f"{percentile(answer_ms, 0.99):.3f} ms"
        )
    if state_ms:
        print(
            f"a step answered from state, inside simroute: p50 {statistics.median(state_ms):.2f} ms, p99 "
            f"{percentile(state_ms, 0.99):.2f} ms"
        )
    print(
        f"REST round trip of a simulated step: p50 {statistics.median(trips):.2f} ms, p99 "
        f"{percentile(trips, 0.99):.2f} ms"
    )
    if options.smoke:
        return
    state_steps = by_sub[("state", True)] + by_sub[("state", False)]
    write_results(
        __file__,
        "A simulated shell's steps against the sandbox image, through "
        "the sim route (issue 37's workload; the bundled model loaded)",
        [
            row(
                f"steps equal to the sandbox ({total} steps, {len(episodes)} episodes)",
                share,
                "share",
                target=f">= {TARGET_EQUAL}",
                better="higher",
            ),
            row("steps answered from the world state (no model call)", state_steps / total, "share", better="higher"),
            row(
                "inside simroute p50, a step answered from state",
                statistics.median(state_ms) if state_ms else 0.0,
                "ms",
                target="<= 2",
                better="lower",
            ),
            row(
                "inside simroute p99, a step answered from state",
                percentile(state_ms, 0.99) if state_ms else 0.0,
                "ms",
                target="<= 20",
                better="lower",
            ),
            row(
                "REST round trip p50 of a simulated shell step",
                statistics.median(trips),
                "ms",
                target="<= 50",
                better="lower",
            ),
        ],
    )


if __name__ == "__main__":
    asyncio.run(main())
