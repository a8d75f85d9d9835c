"""A simulated step through each client of `simroute serve`, against the model alone.

The same loop (one `route: sim` episode per round, `echo` with a new text each step,
the world model an OpenAI-compatible stub that answers at once in its own process):
  openenv   openenv-core's `GenericEnvClient` over `/ws` (what TRL, SkyRL and the
            other OpenEnv trainers use): reset, then step
  rest      simroute's REST API with a keep-alive httpx client: POST /episodes, then
            POST /episodes/{id}/step
  model     the baseline: the same chat completion sent straight to the stub, what a
            step would cost with no simroute at all (the request simroute sends for a
            step midway through an episode, read back from the stub, sent as is)
Rounds interleave the three (rotating order); each is timed per step from the
client. The figure is the p50 over every round's steps; the overhead ratio is a
client's p50 over the model's. `info.simroute_ms` (time inside simroute) is shown
beside, so the transport's share can be read off.

Usage: python benchmarks/episode_clients.py [--steps 100] [--rounds 10] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx2 as httpx
from _episodes import TOOLBOX, load_average, model_stub, percentile, serving, write_config
from _results import add_smoke_flag, row, write_results
from openenv.core.generic_client import GenericEnvClient

SIM = {"route": "sim"}
Loop = Callable[[int, int], Awaitable[tuple[list[float], list[float]]]]


def action(round_index: int, n: int) -> dict:
    return {"type": "call_tool", "tool_name": "echo", "arguments": {"text": f"bench-tag-r{round_index}-{n}"}}


def openenv_loop(base_url: str) -> Loop:
    async def run(round_index: int, steps: int) -> tuple[list[float], list[float]]:
        client_ms, inside_ms = [], []
        async with GenericEnvClient(base_url=base_url) as env:
            await env.reset(options=SIM)
            for n in range(steps):
                started = time.perf_counter()
                result = await env.step(action(round_index, n))
                client_ms.append((time.perf_counter() - started) * 1000)
                info = result.observation["info"]
                assert info["provenance"] == "sim" and not info["infra_error"], info
                inside_ms.append(info["simroute_ms"])
        return client_ms, inside_ms

    return run


def rest_loop(http: httpx.AsyncClient) -> Loop:
    async def run(round_index: int, steps: int) -> tuple[list[float], list[float]]:
        client_ms, inside_ms = [], []
        answer = await http.post("/episodes", json={"options": SIM})
        answer.raise_for_status()
        episode = answer.json()["episode_id"]
        for n in range(steps):
            started = time.perf_counter()
            answer = await http.post(f"/episodes/{episode}/step", json=action(round_index, n))
            client_ms.append((time.perf_counter() - started) * 1000)
            answer.raise_for_status()
            info = answer.json()["info"]
            assert info["provenance"] == "sim" and not info["infra_error"], info
            inside_ms.append(info["simroute_ms"])
        (await http.delete(f"/episodes/{episode}")).raise_for_status()
        return client_ms, inside_ms

    return run


def model_loop(http: httpx.AsyncClient, url: str, request: dict) -> Loop:
    async def run(round_index: int, steps: int) -> tuple[list[float], list[float]]:
        client_ms = []
        for _ in range(steps):
            started = time.perf_counter()
            answer = await http.post(url, json=request)
            client_ms.append((time.perf_counter() - started) * 1000)
            answer.raise_for_status()
        return client_ms, []

    return run


async def simroute_request(rest: Loop, stats_url: str, http: httpx.AsyncClient, steps: int) -> dict:
    """The chat request simroute sends for a step midway through an episode: a REST
    episode is stepped that far, and the stub answers the last body it was sent."""
    await rest(-1, max(5, steps // 2))
    return (await http.get(stats_url)).json()["last_body"]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=10)
    add_smoke_flag(parser)
    options = parser.parse_args()
    if options.smoke:
        options.steps, options.rounds = 5, 1
    with tempfile.TemporaryDirectory(prefix="simroute-bench-") as folder, model_stub() as stub:
        workdir = Path(folder)
        config = write_config(workdir, mcpServers={"toolbox": TOOLBOX}, world_model=stub.world_model())
        with serving(config, workdir / "serve.log") as served:
            async with httpx.AsyncClient(base_url=served.base_url, timeout=120) as http:
                rest = rest_loop(http)
                request = await simroute_request(rest, stub.stats_url, http, options.steps)
                loops = {
                    "openenv": openenv_loop(served.base_url),
                    "rest": rest,
                    "model": model_loop(http, f"{stub.url}/chat/completions", request),
                }
                for run in loops.values():  # warm-up: the upstream's tool list read, connections open
                    await run(-1, 5)
                samples: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in loops}
                names = list(loops)
                for round_index in range(options.rounds):
                    shift = round_index % len(names)
                    for name in names[shift:] + names[:shift]:
                        client_ms, inside_ms = await loops[name](round_index, options.steps)
                        samples[name][0].extend(client_ms)
                        samples[name][1].extend(inside_ms)
                    print(f"round {round_index + 1}/{options.rounds} done, load {load_average()}", flush=True)
    report(samples, options)


def report(samples: dict[str, tuple[list[float], list[float]]], options: argparse.Namespace) -> None:
    model_p50 = statistics.median(samples["model"][0])
    print(f"\n{options.rounds} rounds x {options.steps} steps, interleaved\n")
    print(f"{'client':10} {'p50 ms':>8} {'p99 ms':>8} {'inside p50':>11} {'/ model':>8}")
    figures = {}
    for name, (client_ms, inside_ms) in samples.items():
        p50 = statistics.median(client_ms)
        inside = f"{statistics.median(inside_ms):11.2f}" if inside_ms else f"{'-':>11}"
        figures[name] = p50
        print(f"{name:10} {p50:8.2f} {percentile(client_ms, 0.99):8.2f} {inside} {p50 / model_p50:8.2f}")
    if options.smoke:
        return
    rows = [row(f"step p50, {name}", p50, "ms", better="lower") for name, p50 in figures.items()]
    rows += [
        row(f"step inside simroute p50, {name}", statistics.median(samples[name][1]), "ms", better="lower")
        for name in ("openenv", "rest")
    ]
    for name, label in (("openenv", "OpenEnv GenericEnvClient over /ws"), ("rest", "REST with httpx")):
        rows.append(
            row(
                f"{label} / the model alone (p50)",
                figures[name] / model_p50,
                "ratio",
                baseline="the same chat completion sent to the world model directly",
                better="lower",
            )
        )
    write_results(
        __file__,
        "A simulated step through OpenEnv's client and REST (world "
        "model: an instant stub), against the stub called directly",
        rows,
    )


if __name__ == "__main__":
    asyncio.run(main())
