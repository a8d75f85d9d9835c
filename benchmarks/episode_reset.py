"""Reset latency of an episode: simulated, and a real shell sandbox from the warm pool
or started cold.

  sim, in-process   `EpisodeHost.reset(options={"route": "sim"})` on a runtime in this
                    process (no real side: the toolbox server is configured, never started)
  sim, REST         `POST /episodes` on `simroute serve` with the same config, from a
                    keep-alive httpx client (the HTTP round trip included)
  shell, warm pool  `route: real`, the shell channel alone, `files` given: the reset writes
                    them into the episode's sandbox, taken from the warm pool (pool_size 2,
                    refilled before each reset)
  shell, cold       the same with pool_size 0: `docker run` and the shell start in the reset
Every episode is closed after its reset (not timed). Rounds interleave the variants: the
two shell resets (rotating order), the pool refilled, then a block of each simulated
variant (rotating order), so all see the same machine state.
Target: simulated reset p50 <= 5 ms.

Usage: python benchmarks/episode_reset.py [--rounds 20] [--sim-per-round 50] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path

import httpx2 as httpx
from _episodes import TOOLBOX, load_average, model_stub, percentile, serving, write_config
from _results import add_smoke_flag, row, write_results

from router.config import load_config
from router.episodes.host import EpisodeHost
from router.mcp.server import build_server
from router.runtime.runtime import Runtime

SIM_OPTIONS = {"route": "sim"}
SHELL_OPTIONS = {
    "route": "real",
    "channels": ["shell"],
    "files": {"task.md": "Make the tests pass.\n", "src/app.py": "def add(a, b):\n    return a - b\n"},
}
TARGET_SIM_P50_MS = 5.0

Timed = Callable[[], Awaitable[float]]


async def in_process_host(stack: AsyncExitStack, config: Path) -> EpisodeHost:
    runtime = Runtime(load_config(config))
    server = build_server(runtime.mcp_parts)
    await runtime.start()
    stack.push_async_callback(runtime.aclose)
    return EpisodeHost(runtime.episode_parts, server)


def timed_in_process(host: EpisodeHost, options: dict) -> Timed:
    async def once() -> float:
        started = time.perf_counter()
        episode = await host.reset(options=options)
        elapsed = time.perf_counter() - started
        assert not episode.infra_error, f"reset {options} failed (see the log)"
        await host.close(episode)
        return elapsed * 1000

    return once


def timed_rest(http: httpx.AsyncClient) -> Timed:
    async def once() -> float:
        started = time.perf_counter()
        answer = await http.post("/episodes", json={"options": SIM_OPTIONS})
        elapsed = time.perf_counter() - started
        answer.raise_for_status()
        (await http.delete(f"/episodes/{answer.json()['episode_id']}")).raise_for_status()
        return elapsed * 1000

    return once


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--sim-per-round", type=int, default=50)
    add_smoke_flag(parser)
    options = parser.parse_args()
    if options.smoke:
        options.rounds, options.sim_per_round = 1, 5
    samples: dict[str, list[float]] = {
        "sim, in-process": [],
        "sim, REST": [],
        "shell, warm pool": [],
        "shell, cold": [],
    }
    async with AsyncExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="simroute-bench-")))  # removed last
        stub = stack.enter_context(model_stub())
        world_model = stub.world_model()
        folders = {name: workdir / name for name in ("sim", "serve", "pool", "cold")}
        for folder in folders.values():
            folder.mkdir()
        sim_config = write_config(folders["sim"], mcpServers={"toolbox": TOOLBOX}, world_model=world_model)
        serve_config = write_config(folders["serve"], mcpServers={"toolbox": TOOLBOX}, world_model=world_model)
        sim_host = await in_process_host(stack, sim_config)
        pool_host = await in_process_host(
            stack, write_config(folders["pool"], shell={"enabled": True, "pool_size": 2}, world_model=world_model)
        )
        cold_host = await in_process_host(
            stack, write_config(folders["cold"], shell={"enabled": True, "pool_size": 0}, world_model=world_model)
        )
        served = stack.enter_context(serving(serve_config, workdir / "serve.log"))
        http = await stack.enter_async_context(httpx.AsyncClient(base_url=served.base_url, timeout=120))
        pool = pool_host.parts.mcp.shell
        assert pool is not None
        shells = {
            "shell, warm pool": timed_in_process(pool_host, SHELL_OPTIONS),
            "shell, cold": timed_in_process(cold_host, SHELL_OPTIONS),
        }
        sims = {"sim, in-process": timed_in_process(sim_host, SIM_OPTIONS), "sim, REST": timed_rest(http)}
        # Warm-up: the route's chain built, the store's statements prepared, the
        # connection open.
        for once in sims.values():
            for _ in range(10):
                await once()
        await pool.wait_ready()
        for round_index in range(options.rounds):
            for name in rotated(list(shells), round_index):
                samples[name].append(await shells[name]())
            await pool.wait_ready()  # no sandbox starts while the simulated resets are timed
            for name in rotated(list(sims), round_index):
                samples[name].extend([await sims[name]() for _ in range(options.sim_per_round)])
            print(f"round {round_index + 1}/{options.rounds} done, load {load_average()}", flush=True)
    report(samples, options.smoke)


def rotated(names: list[str], shift: int) -> list[str]:
    shift %= len(names)
    return names[shift:] + names[:shift]


def report(samples: dict[str, list[float]], smoke: bool) -> None:
    print(f"\n{'reset':18} {'n':>5} {'p50 ms':>9} {'p99 ms':>9}")
    figures = {name: (statistics.median(ms), percentile(ms, 0.99)) for name, ms in samples.items()}
    for name, (p50, p99) in figures.items():
        print(f"{name:18} {len(samples[name]):5} {p50:9.2f} {p99:9.2f}")
    pool_p50, cold_p50 = figures["shell, warm pool"][0], figures["shell, cold"][0]
    print(f"\nshell reset, warm pool / cold: {pool_p50 / cold_p50:.3f}")
    verdicts = {
        name: "met" if figures[name][0] <= TARGET_SIM_P50_MS else "MISSED" for name in ("sim, in-process", "sim, REST")
    }
    print(
        f"target: simulated reset p50 <= {TARGET_SIM_P50_MS:g} ms: "
        + ", ".join(f"{k} {v}" for k, v in verdicts.items())
    )
    if smoke:
        return
    rows = []
    for name, (p50, p99) in figures.items():
        simulated = name.startswith("sim")
        rows.append(
            row(
                f"reset p50, {name}",
                p50,
                "ms",
                target=f"<= {TARGET_SIM_P50_MS:g}" if simulated else None,
                better="lower",
            )
        )
        rows.append(row(f"reset p99, {name} (n = {len(samples[name])})", p99, "ms", better="lower"))
    rows.append(
        row(
            "shell reset, warm pool / cold (p50)",
            pool_p50 / cold_p50,
            "ratio",
            baseline="a cold docker run + shell start in the reset (pool_size 0)",
            better="lower",
        )
    )
    write_results(
        __file__,
        "Episode reset latency: simulated (in-process and REST; world model: an instant stub) and a real shell "
        "sandbox, warm pool or cold",
        rows,
    )


if __name__ == "__main__":
    asyncio.run(main())
