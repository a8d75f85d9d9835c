"""1,000 open episodes on one `simroute serve`, stepped at an offered load.

`simroute serve` in front of the project's toolbox server (a real stdio MCP server),
its world model an OpenAI-compatible stub that answers at once (benchmarks/_model_stub.py,
its own process). A real-route episode first records `echo` answers; then 1,000
episodes are opened over REST, half `route: sim`, half `route: replay` (each replayed
call is one of the recorded ones, so every replay hits). They are stepped open-loop:
step i is sent at t0 + i/rate whatever the earlier ones are doing, round robin over the
episodes (`echo`, a new text each step).

Time inside simroute is the step's `info.simroute_ms` (measured in the server around
the whole step). A simulated step's includes the world model's answer: the stub keeps
each request's service time (first byte read to answer written) under the step's tag,
and that is subtracted step by step. The client's round trip is counted from the
step's scheduled send time, so a generator or server that falls behind shows up.
Errors: HTTP errors, transport errors and steps with `info.infra_error`.
Memory per idle episode: (RSS of the serve process with 1,000 open - RSS with none
open, after warm-up) / 1,000, from /proc/PID/status.
Then short runs at 200, 400, 800, … steps/s until one fails (client p99 > 100 ms, an
error, or under 95% of the offered steps/s achieved): the highest that passed (when
200 fails already, 100, 50, 25 are tried). The serve process's CPU time per step
(/proc/PID/stat, all its threads) says how close to its one event loop's limit it ran.
Targets: 0 errors, p99 inside simroute <= 25 ms at 200 steps/s, <= 300 KB per idle episode.
The load generator shares the machine's cores with the server and the stub.

With the default config a simulated `echo` after the recording is answered by
sequence-aligned replay (world_state.mcp_alignment), not the stub; `--mcp-alignment
off` makes every simulated step ask the stub, as before that existed (a like-for-like
comparison with older revisions).

Usage: python benchmarks/episode_load.py [--episodes 1000] [--rate 200] [--duration 30]
       [--search-duration 5] [--max-rate 6400] [--mcp-alignment on|off] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx2 as httpx
from _episodes import TOOLBOX, Served, load_average, model_stub, percentile, rss_kb, serving, write_config
from _results import add_smoke_flag, row, write_results

SEARCH_P99_MS = 100.0


@dataclass
class OpenEpisode:
    id: str
    route: str  # sim or replay
    index: int
    steps: int = 0


@dataclass
class Sample:
    route: str
    tag: str
    client_ms: float  # from the scheduled send time to the answer
    lag_ms: float  # how late the generator sent it
    done_at: float
    simroute_ms: float | None = None
    inside_ms: float | None = None  # simroute_ms minus the stub's service time for this step
    provenance: str | None = None
    infra_error: bool = False
    error: str | None = None


@dataclass
class Run:
    rate: float
    samples: list[Sample]
    elapsed_s: float
    serve_cpu_s: float  # CPU time the serve process used during the run (all its threads)
    generator_cpu_s: float  # and this process (the load generator and its HTTP client)

    @property
    def inside_ms(self) -> list[float]:
        return [s.inside_ms for s in self.samples if s.inside_ms is not None]

    def window_p99s(self, seconds: float = 5.0) -> list[float]:
        """p99 inside simroute per window of scheduled send time: a transient (another
        process taking the cores, a pause) shows as one bad window, a saturated server
        as all of them."""
        start = min(s.done_at - s.client_ms / 1000 for s in self.samples)
        windows: dict[int, list[float]] = {}
        for s in self.samples:
            if s.inside_ms is not None:
                windows.setdefault(int((s.done_at - s.client_ms / 1000 - start) // seconds), []).append(s.inside_ms)
        return [percentile(windows[w], 0.99) for w in sorted(windows)]

    @property
    def errors(self) -> int:
        return sum(1 for s in self.samples if s.error is not None or s.infra_error)

    @property
    def achieved(self) -> float:
        return len(self.samples) / self.elapsed_s

    @property
    def replay_misses(self) -> int:
        return sum(1 for s in self.samples if s.route == "replay" and s.error is None and s.provenance != "replay")

    def error_kinds(self) -> dict[str, int]:
        kinds: dict[str, int] = {}
        for s in self.samples:
            kind = s.error or ("infra_error" if s.infra_error else None)
            if kind is not None:
                kinds[kind] = kinds.get(kind, 0) + 1
        return kinds

    def client_p99(self) -> float:
        return percentile([s.client_ms for s in self.samples], 0.99)

    def passed(self) -> bool:
        return self.errors == 0 and self.client_p99() <= SEARCH_P99_MS and self.achieved >= 0.95 * self.rate


def call(text: str) -> dict:
    return {"type": "call_tool", "tool_name": "echo", "arguments": {"text": text}}


def text_of(episode: OpenEpisode, n: int) -> tuple[str, str]:
    """The step's tag (the stub's key for its service time) and the echoed text."""
    if episode.route == "replay":
        return "", f"replay-{n}"  # recorded by the source episode: a hit
    tag = f"{episode.index}-{n}"
    return tag, f"bench-tag-{tag}"


async def reset(http: httpx.AsyncClient, route: str) -> str:
    answer = await http.post("/episodes", json={"options": {"route": route}})
    answer.raise_for_status()
    return answer.json()["episode_id"]


async def record_replay_source(http: httpx.AsyncClient, calls: int) -> None:
    """A real-route episode calls echo('replay-0'…): the last session that made each
    call is where replay episodes find it."""
    episode = await reset(http, "real")
    for n in range(calls):
        info = (await http.post(f"/episodes/{episode}/step", json=call(f"replay-{n}"))).json()["info"]
        assert info["provenance"] == "real", info
    await http.delete(f"/episodes/{episode}")


async def warm_up(http: httpx.AsyncClient) -> None:
    """One sim and one replay episode step: the upstream's tool list is read, the
    world model client connects, the replay lookups' code paths run once."""
    for route in ("sim", "replay"):
        episode = await reset(http, route)
        for n in range(3):
            text = f"replay-{n}" if route == "replay" else f"bench-tag-warm-{n}"
            (await http.post(f"/episodes/{episode}/step", json=call(text))).raise_for_status()
        await http.delete(f"/episodes/{episode}")


async def open_episodes(
    http: httpx.AsyncClient, count: int, concurrency: int = 16
) -> tuple[list[OpenEpisode], list[float]]:
    """`count` episodes, alternately sim and replay; the reset latencies (ms)."""
    episodes: list[OpenEpisode | None] = [None] * count
    latencies: list[float] = []
    queue = iter(range(count))

    async def opener() -> None:
        for index in queue:
            route = "sim" if index % 2 == 0 else "replay"
            started = time.perf_counter()
            episode_id = await reset(http, route)
            latencies.append((time.perf_counter() - started) * 1000)
            episodes[index] = OpenEpisode(episode_id, route, index)

    await asyncio.gather(*(opener() for _ in range(concurrency)))
    return [e for e in episodes if e is not None], latencies


async def step(http: httpx.AsyncClient, episode: OpenEpisode, n: int, scheduled: float) -> Sample:
    loop = asyncio.get_running_loop()
    tag, text = text_of(episode, n)
    sent = loop.time()
    try:
        answer = await http.post(f"/episodes/{episode.id}/step", json=call(text))
    except httpx.HTTPError as exc:
        done = loop.time()
        return Sample(
            episode.route, tag, (done - scheduled) * 1000, (sent - scheduled) * 1000, done, error=type(exc).__name__
        )
    done = loop.time()
    sample = Sample(episode.route, tag, (done - scheduled) * 1000, (sent - scheduled) * 1000, done)
    if answer.status_code != 200:
        sample.error = f"HTTP {answer.status_code}"
        return sample
    info = answer.json()["info"]
    sample.simroute_ms, sample.provenance, sample.infra_error = (
        info["simroute_ms"],
        info["provenance"],
        info["infra_error"],
    )
    return sample


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def offered_load(
    http: httpx.AsyncClient, stats_url: str, serve_pid: int, episodes: list[OpenEpisode], rate: float, duration_s: float
) -> Run:
    """Step i sent at t0 + i/rate (open loop), round robin over the episodes."""
    await http.get(stats_url)  # forget the stub's earlier requests
    cpu_before, generator_before = cpu_s(serve_pid), time.process_time()
    loop = asyncio.get_running_loop()
    total = max(1, int(rate * duration_s))
    tasks = []
    t0 = loop.time() + 0.05
    for i in range(total):
        episode = episodes[i % len(episodes)]
        n, episode.steps = episode.steps, episode.steps + 1
        scheduled = t0 + i / rate
        delay = scheduled - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        elif i % 16 == 0:
            await asyncio.sleep(0)  # behind schedule: still let answers in
        tasks.append(asyncio.create_task(step(http, episode, n, scheduled)))
    samples = list(await asyncio.gather(*tasks))
    serve_cpu, generator_cpu = cpu_s(serve_pid) - cpu_before, time.process_time() - generator_before
    stub_us = (await http.get(stats_url)).json()["by_tag_us"]
    for sample in samples:
        if sample.simroute_ms is not None:
            sample.inside_ms = sample.simroute_ms - stub_us.get(sample.tag, 0.0) / 1000
    # Steps/s over the offered window, or over longer if the last answers came late.
    return Run(rate, samples, max(total / rate, max(s.done_at for s in samples) - t0), serve_cpu, generator_cpu)


def describe(run: Run) -> str:
    by_route = {
        route: [s.simroute_ms for s in run.samples if s.route == route and s.simroute_ms is not None]
        for route in ("sim", "replay")
    }
    routes = "  ".join(f"{route} p50 {statistics.median(ms):.2f} ms" for route, ms in by_route.items() if ms)
    return (
        f"offered {run.rate:6.0f}/s  achieved {run.achieved:7.1f}/s  inside p50 "
        f"{statistics.median(run.inside_ms):6.2f} "
        f"p99 {percentile(run.inside_ms, 0.99):7.2f} ms  client p99 {run.client_p99():8.2f} ms  "
        f"generator lag p99 {percentile([s.lag_ms for s in run.samples], 0.99):7.2f} ms  "
        f"CPU ms/step serve {run.serve_cpu_s * 1000 / len(run.samples):4.2f} generator "
        f"{run.generator_cpu_s * 1000 / len(run.samples):4.2f}  errors {run.errors} {run.error_kinds() or ''}  "
        f"replay misses {run.replay_misses}  [{routes}]  load {load_average()}"
    )


def ladder(first: float, cap: float) -> list[float]:
    rates = [first]
    while rates[-1] * 2 <= cap:
        rates.append(rates[-1] * 2)
    return rates


async def search_capacity(run_at: Callable[[float], Awaitable[Run]], rates: list[float], floor: float) -> list[Run]:
    """Short runs up the ladder until one fails; when the first fails already, down
    by halves until one passes (or `floor`), so the figure is still a measured load."""
    runs: list[Run] = []
    for rate in rates:
        runs.append(await run_at(rate))
        if not runs[-1].passed():
            break
    rate = rates[0] / 2
    while not any(r.passed() for r in runs) and rate >= floor:
        runs.append(await run_at(rate))
        rate /= 2
    return runs


async def measure(
    options: argparse.Namespace, stats_url: str, served: Served, rates: list[float]
) -> tuple[Run, list[Run], float, list[float]]:
    # Idle connections expire before the server's keep-alive timeout (uvicorn: 5 s): a
    # request never goes out on a connection the server is closing at that moment.
    limits = httpx.Limits(max_connections=512, max_keepalive_connections=512, keepalive_expiry=2.0)
    async with httpx.AsyncClient(base_url=served.base_url, limits=limits, timeout=120) as http:
        planned = options.rate * options.duration + 2 * sum(r * options.search_duration for r in rates)
        # Round robin: each episode's most steps.
        await record_replay_source(http, math.ceil(planned / options.episodes) + 1)
        await warm_up(http)
        await asyncio.sleep(1.0)
        rss_empty = rss_kb(served.pid)
        episodes, reset_ms = await open_episodes(http, options.episodes)
        await asyncio.sleep(1.0)
        rss_open = rss_kb(served.pid)
        per_idle_kb = (rss_open - rss_empty) * 1.024 / len(episodes)  # KiB to KB
        print(
            f"opened {len(episodes)} episodes: reset p50 {statistics.median(reset_ms):.2f} ms, p99 "
            f"{percentile(reset_ms, 0.99):.2f} ms"
        )
        print(
            f"serve RSS: {rss_empty / 1024:.1f} MiB with none open, {rss_open / 1024:.1f} MiB with {len(episodes)} open"
        )
        print(f"  -> {per_idle_kb:.1f} KB per idle episode (target <= 300)   load {load_average()}\n")

        print(f"{options.rate:g} steps/s offered for {options.duration:g} s:")
        main_run = await offered_load(http, stats_url, served.pid, episodes, options.rate, options.duration)
        print("  " + describe(main_run))
        print(
            "  p99 inside simroute per 5 s window: " + " ".join(f"{p99:.1f}" for p99 in main_run.window_p99s()) + " ms"
        )

        async def run_at(rate: float) -> Run:
            await asyncio.sleep(options.settle)  # the server settles (records flushed) between runs
            run = await offered_load(http, stats_url, served.pid, episodes, rate, options.search_duration)
            print("  " + describe(run))
            return run

        print(
            f"\nshort runs ({options.search_duration:g} s each) until "
            f"client p99 > {SEARCH_P99_MS:g} ms, an error, or < 95% achieved:"
        )
        search = await search_capacity(run_at, rates, floor=rates[0] / 8)
        for episode in episodes:  # closed one by one: the point is that they close, not how fast
            (await http.delete(f"/episodes/{episode.id}")).raise_for_status()
        await asyncio.sleep(1.0)
        print(f"\nserve RSS after closing them all: {rss_kb(served.pid) / 1024:.1f} MiB")
    return main_run, search, per_idle_kb, reset_ms


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--duration", type=float, default=30.0)
    parser.add_argument("--search-duration", type=float, default=5.0)
    parser.add_argument("--max-rate", type=float, default=6400.0)
    parser.add_argument("--mcp-alignment", choices=("on", "off"), default="on")
    add_smoke_flag(parser)
    options = parser.parse_args()
    options.settle = 2.0
    if options.smoke:
        options.episodes, options.rate, options.duration, options.search_duration, options.max_rate = (
            20,
            50.0,
            1.0,
            0.5,
            100.0,
        )
        options.settle = 0.2
    rates = ladder(200.0 if not options.smoke else 50.0, options.max_rate)
    cap = options.episodes + 16  # the benchmark's own recording and warm-up episodes too
    with tempfile.TemporaryDirectory(prefix="simroute-bench-") as folder, model_stub() as stub:
        workdir = Path(folder)
        config = write_config(
            workdir,
            mcpServers={"toolbox": TOOLBOX},
            world_model=stub.world_model(),
            sessions={"max_open": cap},
            episodes={"max_open_per_token": cap},
            **({"world_state": {"mcp_alignment": False}} if options.mcp_alignment == "off" else {}),
        )
        with serving(config, workdir / "serve.log") as served:
            main_run, search, per_idle_kb, reset_ms = await measure(options, stub.stats_url, served, rates)
    report(options, main_run, search, per_idle_kb, reset_ms)


def report(options: argparse.Namespace, run: Run, search: list[Run], per_idle_kb: float, reset_ms: list[float]) -> None:
    passed = [r.rate for r in search if r.passed()]
    highest = max(passed) if passed else 0.0
    p50, p99 = statistics.median(run.inside_ms), percentile(run.inside_ms, 0.99)
    print(f"\nat {options.rate:g} steps/s: inside simroute p50 {p50:.2f} ms, p99 {p99:.2f} ms (target <= 25)")
    print(
        f"  achieved {run.achieved:.1f} steps/s, errors {run.errors} {run.error_kinds() or ''}(target 0), replay "
        f"misses {run.replay_misses}"
    )
    print(
        f"  serve process CPU {run.serve_cpu_s * 1000 / len(run.samples):.2f} "
        "ms per step (one event loop: ~1 core at most)"
    )
    print(f"idle episode: {per_idle_kb:.1f} KB (target <= 300)")
    print(f"highest offered load with client p99 <= {SEARCH_P99_MS:g} ms: {highest:g} steps/s")
    if options.smoke:
        return
    n = f"{options.episodes} open, half sim half replay"
    write_results(
        __file__,
        f"{options.episodes} open episodes on one simroute serve, "
        "stepped open-loop over REST (world model: an instant stub)",
        [
            row(f"step inside simroute p50 at {options.rate:g} steps/s ({n})", p50, "ms", better="lower"),
            row(f"step inside simroute p99 at {options.rate:g} steps/s", p99, "ms", target="<= 25", better="lower"),
            row(f"client round trip p99 at {options.rate:g} steps/s", run.client_p99(), "ms", better="lower"),
            row(f"steps/s achieved (offered {options.rate:g})", run.achieved, "steps/s", better="higher"),
            row("serve process CPU per step", run.serve_cpu_s * 1000 / len(run.samples), "ms", better="lower"),
            row(
                "errors (HTTP and infra_error steps)",
                run.errors,
                "steps",
                baseline=f"{len(run.samples)} steps",
                target="== 0",
                better="lower",
            ),
            row(
                "resident memory per idle episode",
                per_idle_kb,
                "KB",
                baseline="RSS of serve with none open",
                target="<= 300",
                better="lower",
            ),
            row("reset p50 while opening them (16 at a time)", statistics.median(reset_ms), "ms", better="lower"),
            row(
                f"highest offered load with client p99 <= {SEARCH_P99_MS:g} ms",
                highest,
                "steps/s",
                baseline=f"{options.search_duration:g} s runs at 200, 400, 800, … steps/s",
                better="higher",
            ),
        ],
    )


if __name__ == "__main__":
    asyncio.run(main())
