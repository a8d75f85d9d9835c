"""`simroute export` run as a user runs it, and a loader of its `agentworldbench`
lines written from the format's published field list: `system`, the prompt's
turns (each with `turn_idx`, `role`, `content`), `turn_idx` (the turn to
predict) and `answer`."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from kit.launch import simroute_executable


def export_dataset(config: Path, out: Path, *args: str) -> dict:
    """Runs `simroute export OUT --config CONFIG ARGS…`; returns the dataset card."""
    done = subprocess.run(
        [simroute_executable(), "export", str(out), "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads((out / "dataset.json").read_text())


def lines(path: Path) -> list[dict]:
    """Every line of a JSON-lines file, parsed (a line that does not parse fails the test)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def load_agentworldbench(path: Path) -> list[dict]:
    """Samples as an AgentWorldBench evaluation reads them: the chat to put to the world
    model (system, then the turns in order, the action to predict last) and the answer."""
    samples = []
    for line in lines(path):
        system, turns, turn_idx, answer = line["system"], line["turns"], line["turn_idx"], line["answer"]
        assert isinstance(system, str) and system and isinstance(answer, str)
        assert turns and turns[-1]["role"] == "user" and turns[-1]["turn_idx"] == turn_idx
        for index, turn in enumerate(turns):
            assert turn["role"] == ("user" if index % 2 == 0 else "assistant")  # action, observation, action, …
            assert turn["turn_idx"] == index // 2 + 1
        chat = [{"role": "system", "content": system}] + [{"role": t["role"], "content": t["content"]} for t in turns]
        samples.append({"domain": line["domain"], "messages": chat, "answer": answer, "meta": line["meta"]})
    return samples


# --- a large store, and an export measured (tests/integration/records/test_export_scaling.py,
# benchmarks/export_scaling.py) -------------------------------------------------------------

STEPS_PER_SESSION = 10
TOOLS = [
    {
        "name": "forecast",
        "description": "The weather forecast of a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
    {"name": "alerts", "description": "Weather alerts in force.", "inputSchema": {"type": "object", "properties": {}}},
]


def synthetic_rows(start: int, count: int) -> list[dict]:
    """Records `start`…`start+count-1` of a store of weather sessions, ten calls each: real
    calls, every fifth one shadowed (its simulated side diverged, by 0.05 to 0.95), every
    seventh served by the world model."""
    from calls import call_key

    out = []
    for i in range(start, start + count):
        tool = "alerts" if i % 4 == 3 else "forecast"
        arguments = {} if tool == "alerts" else {"city": f"city-{i % 97}"}
        key = call_key("mcp", "weather", tool, arguments)
        real = {"content": [{"type": "text", "text": f"{tool} #{i}: sunny, {i % 31} C"}], "provenance": "real"}
        simulated = {"content": [{"type": "text", "text": f"{tool}: rain, {i % 13} C"}], "provenance": "sim"}
        route, served, shadow, divergence = "real", real, None, None
        if i % 5 == 0:
            route, shadow, divergence = "shadow", simulated, round(0.05 + (i // 5 * 53 % 91) / 100, 2)
        elif i % 7 == 0:
            route, served = "sim", simulated
        out.append(
            {
                "id": f"{i:032x}",
                "ts": 1_700_000_000 + i,
                "session": f"s{i // STEPS_PER_SESSION:08d}",
                "step": i % STEPS_PER_SESSION,
                "channel": "mcp",
                "server": "weather",
                "tool": tool,
                "arguments": arguments,
                "call_key": key,
                "replay_key": key,
                "occurrence": 1,
                "route": route,
                "policy": "mode",
                "reason": "",
                "note": "",
                "provenance": served["provenance"],
                "latency_ms": 1.0,
                "observation": served,
                "shadow": shadow,
                "divergence": divergence,
                "divergence_kind": "content" if divergence else None,
                "divergence_evidence": {"divergent": ["$"], "masked": []} if divergence else None,
                "status": "complete",
            }
        )
    return out


async def fill_store(store, count: int, *, batch: int = 5000) -> None:
    """`count` synthetic records and the server's tool list, written to an open store."""
    await store.save_tool_snapshot("weather", TOOLS)
    for start in range(0, count, batch):
        await store.upsert(synthetic_rows(start, min(batch, count - start)))


def measured_export(config: Path, out: Path, *args: str) -> tuple[float, float, dict]:
    """`simroute export` in its own process: (seconds, peak resident memory in MB, the card)."""
    import os
    import time

    started = time.perf_counter()
    process = subprocess.Popen(
        [simroute_executable(), "export", str(out), "--config", str(config), "--overwrite", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0, process.stderr.read().decode() if process.stderr else ""
    return seconds, usage.ru_maxrss / 1024, json.loads((out / "dataset.json").read_text())


async def export_at_sizes(
    kind: str,
    folder: Path,
    sizes: list[int],
    *,
    redis_url: str | None = None,
    orders: tuple[str, ...] = ("session",),
    measured: Callable[[dict], None] = lambda figure: None,
) -> list[dict]:
    """One store (`sqlite`, or `redis` at `redis_url`) grown to each of `sizes` in turn and
    exported at each, once per order asked for (`session`: as read; `hardest-first`): the
    order, records, seconds, records a second and peak resident MB per size and order
    (each also handed to `measured` as soon as it is measured). Exported without
    demonstrations: the measure is of the records' streaming."""
    from records.store.redis.store import RedisStore
    from records.store.sqlite.store import SQLiteStore

    folder.mkdir(parents=True, exist_ok=True)
    if kind == "redis":
        assert redis_url is not None
        store, section = RedisStore(redis_url), {"url": redis_url}
    else:
        store, section = SQLiteStore(folder / "records.db"), {"path": str(folder / "records.db")}
    config = folder / "simroute.yaml"
    config.write_text(json.dumps({"store": section}))
    await store.open()
    await store.save_tool_snapshot("weather", TOOLS)
    figures, held = [], 0
    try:
        for size in sizes:
            for start in range(held, size, 5000):
                await store.upsert(synthetic_rows(start, min(5000, size - start)))
            held = size
            for order in orders:
                args = ("--hardest-first",) if order == "hardest-first" else ()
                # The records' streaming is measured: demonstrations would add one store
                # query per exported call, a cost of their own (docs/training-data.md, Scale).
                seconds, peak_mb, card = measured_export(config, folder / "out", "--no-demonstrations", *args)
                assert card["counts"]["records_read"] == size and card["order"]["by"] == (
                    "divergence" if args else "session"
                )
                figures.append(
                    {
                        "order": order,
                        "records": size,
                        "seconds": seconds,
                        "rate": size / seconds,
                        "peak_mb": peak_mb,
                        "card": card,
                    }
                )
                measured(figures[-1])
    finally:
        await store.aclose()
    return figures
