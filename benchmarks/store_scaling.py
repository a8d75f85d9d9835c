"""Replay latency and a simulated call's routing overhead as the store grows.

Three stores hold 100, 10,000 and 100,000 records of the same tool. For each,
the engine serves (a) replayed calls (the source lookup and the occurrence row)
and (b) simulated calls through the real world-model simulator and MCP prompt
builder, the model stubbed to answer at once: what remains is simroute's own
work, the store's example lookup included. Rounds are interleaved across the
three stores. Target: the largest store <= 1.5x the smallest.

With --smoke: stores of 100 and 1,000 records, one round of a few calls.

Run: .venv/bin/python benchmarks/store_scaling.py [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _results import add_smoke_flag, row, write_results

from backends.replay import ReplayBackend
from backends.world_model.model_runner import Completion
from calls import Call, Observation, Provenance, Route, Session
from policies.chain import default_policies
from records.store.record_log import RecordLog
from records.store.sqlite.store import SQLiteStore
from router.config import Config
from router.engine.engine import Engine
from router.runtime.example_lookup import ExampleLookup
from router.runtime.simulated_side import build_simulator

SIZES = (100, 10_000, 100_000)
ROUNDS = 5
CALLS_PER_ROUND = 40
SMOKE = {"sizes": (100, 1_000), "rounds": 1, "calls_per_round": 8}


class InstantModel:
    """A model runner that answers at once (the model's own time left out)."""

    async def start(self) -> None: ...

    def count_tokens(self, text: str) -> int:
        return len(text) // 4

    async def complete(self, messages, **kwargs) -> Completion:
        return Completion("<predicted_observation>sunny, 21 C</predicted_observation>", 0, 0, 0, 0.0, "stop")

    async def aclose(self) -> None: ...


def rows(count: int) -> list[dict]:
    from calls import call_key

    out = []
    for i in range(count):
        arguments = {"city": f"city-{i % 50}"}
        key = call_key("mcp", "weather", "forecast", arguments)
        out.append(
            {
                "id": f"{i:032x}",
                "ts": 1_000_000 + i,
                "session": f"s{i // 10}",
                "step": i % 10,
                "channel": "mcp",
                "server": "weather",
                "tool": "forecast",
                "arguments": arguments,
                "call_key": key,
                "replay_key": key,
                "occurrence": 1,
                "route": "real",
                "policy": "mode",
                "reason": "",
                "note": "",
                "provenance": "real",
                "latency_ms": 1.0,
                "observation": {"content": [{"type": "text", "text": f"forecast {i}: sunny"}], "provenance": "real"},
                "shadow": None,
                "divergence": None,
                "status": "complete",
            }
        )
    return out


async def build(folder: Path, size: int) -> tuple[Engine, Engine]:
    store = await SQLiteStore(folder / f"r{size}.db").open()
    everything = rows(size)
    for start in range(0, size, 5000):
        await store.upsert(everything[start : start + 5000])
    records = await RecordLog(store, folder / f"r{size}.spool.jsonl").start()
    config = Config()
    examples = ExampleLookup(store)
    examples.loop = asyncio.get_running_loop()
    simulator = build_simulator(config, store, InstantModel(), examples)
    replay = ReplayBackend(store)
    examples.call_key_of = lambda call: replay.keys(call).replay
    examples.exact_key_of = lambda call: replay.keys(call).exact

    def engine(mode: Route) -> Engine:
        return Engine(
            policies=default_policies(rules=[], mode=mode), records=records, replay=replay, simulator=simulator
        )

    return engine(Route.REPLAY), engine(Route.SIM)


async def timed(engine: Engine, session: Session, calls: int, prefix: str) -> list[float]:
    async def real(call: Call) -> Observation:
        return Observation([{"type": "text", "text": "real"}], Provenance.REAL)

    out = []
    for n in range(calls):
        call = Call("mcp", "weather", "forecast", {"city": f"{prefix}-{(n * 7) % 40}"}, session.id)
        started = time.perf_counter()
        outcome = await engine.handle(call, session, real, read_only=True)
        out.append(time.perf_counter() - started)
        assert outcome.observation.provenance in (Provenance.REPLAY, Provenance.SIM), outcome.observation.text
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_smoke_flag(parser)
    options = parser.parse_args()
    sizes, rounds, calls_per_round = (
        (SMOKE["sizes"], SMOKE["rounds"], SMOKE["calls_per_round"])
        if options.smoke
        else (SIZES, ROUNDS, CALLS_PER_ROUND)
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        engines = {size: await build(folder, size) for size in sizes}
        replay_ms: dict[int, list[float]] = {size: [] for size in sizes}
        sim_ms: dict[int, list[float]] = {size: [] for size in sizes}
        for round_ in range(rounds):
            for size in sizes if round_ % 2 == 0 else reversed(sizes):
                replay_engine, sim_engine = engines[size]
                replay_ms[size] += await timed(
                    replay_engine, Session(f"replay-{round_}-{size}"), calls_per_round, "city"
                )
                sim_ms[size] += await timed(
                    sim_engine, Session(f"sim-{round_}-{size}"), calls_per_round // 4, "elsewhere"
                )  # never a replay source
    print(
        f"{'records of the tool':>20} {'replay p50 ms':>14} "
        f"{'replay p99 ms':>14} {'sim overhead p50 ms':>20} {'sim p99 ms':>11}"
    )
    rows = []
    for size in sizes:
        r, s = sorted(replay_ms[size]), sorted(sim_ms[size])
        r99, s99 = r[max(0, int(len(r) * 0.99) - 1)], s[max(0, int(len(s) * 0.99) - 1)]
        print(
            f"{size:>20,} {statistics.median(r) * 1e3:14.3f} {r99 * 1e3:14.3f} "
            f"{statistics.median(s) * 1e3:20.3f} {s99 * 1e3:11.3f}"
        )
        rows.append(row(f"replay p50, {size:,} records", statistics.median(r) * 1e3, "ms", better="lower"))
        rows.append(
            row(f"simulated-call overhead p50, {size:,} records", statistics.median(s) * 1e3, "ms", better="lower")
        )
    small, large = sizes[0], sizes[-1]
    replay_ratio = statistics.median(replay_ms[large]) / statistics.median(replay_ms[small])
    sim_ratio = statistics.median(sim_ms[large]) / statistics.median(sim_ms[small])
    print(
        f"\nlargest / smallest (median): replay {replay_ratio:.2f}, "
        f"simulated-call overhead {sim_ratio:.2f}  (target <= 1.5)"
    )
    if not options.smoke:
        smallest = f"the same calls on a store of {small:,} records, interleaved rounds"
        rows.append(
            row(
                "replay, largest / smallest store",
                replay_ratio,
                "ratio",
                baseline=smallest,
                target="<= 1.5",
                better="lower",
            )
        )
        rows.append(
            row(
                "simulated-call overhead, largest / smallest store",
                sim_ratio,
                "ratio",
                baseline=smallest,
                target="<= 1.5",
                better="lower",
            )
        )
        write_results(__file__, "Replay latency and simulated-call overhead as the store grows", rows)


if __name__ == "__main__":
    asyncio.run(main())
