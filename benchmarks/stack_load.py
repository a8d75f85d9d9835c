"""50 agent sessions × 200 mixed calls through the docker-compose stack's balancer,
1 and 2 router replicas, against one `simroute serve` doing the same work directly.

The stack is docker-compose.yml with benchmarks/stack/compose.bench.yml over it: its
world model the instant stub (benchmarks/_model_stub.py), its config
benchmarks/stack/simroute.yaml (the real MCP server: the `time` server of the router
image). The baseline is one `simroute serve` on the host with the same config, only
the addresses changed (its store a redis-server on the host, persisted like the
stack's; see benchmarks/_stack.py). Both get the deployment's token.

Each session is an episode over REST (POST /episodes, then /episodes/{id}/step), its
route a plan: `convert_time` replayed from the named recording `stack-bench` (a real
episode recorded its answers first), `get_current_time` in UTC real, in Tokyo
simulated by the stub (its one answer is Tokyo's time: simroute checks the zone). Its
calls cycle real, sim, replay (each session starts at another point of the cycle);
each replayed call is one the recording made. A session's first call is an untimed
opening one (real: it starts the session's upstream server, a process spawn), four
sessions opening at a time; the timed calls start when every session has opened.
Sessions run closed-loop, all at once: a call goes when the session's previous answer
is in.

Per run: calls/s over the timed window, the round trip's p50/p99 as the client sees
it, errors (HTTP and transport errors, `infra_error`, an MCP error result, an answer
from another route than planned), steps served by another replica than the one that
reset the episode, and the records audit: after the run the store's records (`simroute
records --json`; in the stack run inside a router container) must hold exactly one
complete record per answered call (by the step's `info.record_id`) and nothing else
for the run's sessions. Runs are interleaved (baseline, 1 replica, 2 replicas; again
with --repeats) and pooled per target. The stack stays up idle during baseline runs.
Targets: 0 errors, 0 records lost, stack p99 <= 2x the baseline's. The machine's
cores are shared by the load generator, the balancer, the replicas, Redis and the stub.

Usage: python benchmarks/stack_load.py [--sessions 50] [--calls 200] [--replicas 1,2]
       [--repeats 2] [--opening-at-once 4] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import secrets
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]
import httpx2 as httpx  # noqa: E402
from _episodes import load_average, percentile  # noqa: E402
from _results import add_smoke_flag, row, write_results  # noqa: E402
from _stack import REPLICA, baseline, stack  # noqa: E402
from _stack_audit import Audit, audit  # noqa: E402

RECORDING = "stack-bench"
# The stub answers Tokyo's time (compose.bench.yml): simroute checks that the answer
# echoes the asked time zone, as the recorded answers do.
SIM_ZONE = "Asia/Tokyo"
ROUTE_PLAN = {
    "mode": "sim",
    "rules": [
        {"name": "replayed", "match": {"tool": "convert_time"}, "route": "replay"},
        {"name": "real-utc", "match": {"tool": "get_current_time", "arguments": {"timezone": "UTC"}}, "route": "real"},
    ],
}
# Sessions opened at once: each opening starts an upstream process (a Python start,
# ~1 s of CPU here); 50 at once on 2 cores took one replica past the upstream's 30 s
# start deadline, which is the set-up's cost, not the steady state measured here.
OPENING_AT_ONCE = 4
KINDS = ("real", "sim", "replay")  # the provenance each kind of call must come back with


class Target(Protocol):
    url: str
    token: str

    @property
    def name(self) -> str: ...

    def records(self, since: float) -> list[dict[str, Any]]: ...


def action(kind: str, n: int) -> dict[str, Any]:
    """The n-th call of its kind in a session (a replayed one: the recording's n-th)."""
    if kind == "real":
        return {"type": "call_tool", "tool_name": "get_current_time", "arguments": {"timezone": "UTC"}}
    if kind == "sim":
        return {"type": "call_tool", "tool_name": "get_current_time", "arguments": {"timezone": SIM_ZONE}}
    clock = f"{n // 60 % 24:02d}:{n % 60:02d}"
    return {
        "type": "call_tool",
        "tool_name": "convert_time",
        "arguments": {"source_timezone": "UTC", "time": clock, "target_timezone": "Asia/Tokyo"},
    }


def plan(session: int, calls: int) -> list[tuple[str, dict[str, Any]]]:
    counts = dict.fromkeys(KINDS, 0)
    out = []
    for i in range(calls):
        kind = KINDS[(session + i) % len(KINDS)]
        out.append((kind, action(kind, counts[kind])))
        counts[kind] += 1
    return out


@dataclass
class Step:
    kind: str
    ms: float
    record_id: str | None = None
    error: str | None = None
    replica: str | None = None
    detail: str = ""  # an error's text (the first lines of the result)


@dataclass
class Run:
    target: str
    steps: list[Step]  # the timed ones
    elapsed_s: float
    opening: list[Step]  # each session's untimed first call
    audit: Audit
    moved: int  # steps another replica served than the one that reset the episode
    per_replica: dict[str, int] = field(default_factory=dict)  # sessions reset on each replica
    load: str = ""

    @property
    def ms(self) -> list[float]:
        return [s.ms for s in self.steps if s.error is None]

    @property
    def errors(self) -> int:
        return sum(1 for s in [*self.opening, *self.steps] if s.error is not None)

    def error_kinds(self) -> dict[str, int]:
        kinds: dict[str, int] = {}
        for s in [*self.opening, *self.steps]:
            if s.error is not None:
                kinds[s.error] = kinds.get(s.error, 0) + 1
        return kinds


async def step(http: httpx.AsyncClient, episode: str, kind: str, body: dict[str, Any]) -> Step:
    started = time.perf_counter()
    try:
        answer = await http.post(f"/episodes/{episode}/step", json=body)
    except httpx.HTTPError as exc:
        return Step(kind, (time.perf_counter() - started) * 1000, error=type(exc).__name__)
    result = Step(kind, (time.perf_counter() - started) * 1000, replica=answer.headers.get(REPLICA))
    if answer.status_code != 200:
        result.error = f"HTTP {answer.status_code}"
        return result
    document = answer.json()
    info, call_result = document["info"], document["observation"].get("result") or {}
    result.record_id = info["record_id"]
    if info["infra_error"]:
        result.error = f"infra_error ({kind}: {info['route']} by {info['policy']})"
        result.detail = str((call_result.get("content") or [{}])[0].get("text", ""))[:300]
    elif call_result.get("isError", call_result.get("is_error")):
        result.error = "error result"
    elif info["provenance"] != kind:
        result.error = f"{kind} answered by {info['provenance']}"
    return result


async def reset(http: httpx.AsyncClient, options: dict[str, Any]) -> tuple[str, str | None]:
    answer = await http.post("/episodes", json={"options": {"servers": ["time"], **options}})
    assert answer.status_code == 201, answer.text
    return answer.json()["episode_id"], answer.headers.get(REPLICA)


def client(target: Target, sessions: int) -> httpx.AsyncClient:
    # Idle connections expire before the servers' keep-alive timeout (uvicorn: 5 s).
    limits = httpx.Limits(max_connections=sessions + 8, max_keepalive_connections=sessions + 8, keepalive_expiry=2.0)
    return httpx.AsyncClient(
        base_url=target.url, headers={"Authorization": f"Bearer {target.token}"}, limits=limits, timeout=120
    )


async def record(target: Target, replays: int) -> list[str]:
    """A real episode makes every replayed call once (tagged `stack-bench` by the
    config); the record ids of its answers."""
    async with client(target, 1) as http:
        episode, _ = await reset(http, {"route": "real"})
        ids = []
        for n in range(replays):
            answer = await step(http, episode, "real", action("replay", n))
            assert answer.error is None and answer.record_id, answer
            ids.append(answer.record_id)
        await http.delete(f"/episodes/{episode}")
    return ids


async def run_sessions(target: Target, sessions: int, calls: int, opening_at_once: int = OPENING_AT_ONCE) -> Run:
    started_wall = time.time()
    load = load_average()
    opened = asyncio.Event()
    ready = [0]
    episodes: list[str] = []
    homes: dict[str, int] = {}
    opening: list[Step] = []
    timed: list[Step] = []
    moved = [0]
    window: list[float] = []

    opening_slots = asyncio.Semaphore(opening_at_once)

    async def session(index: int, http: httpx.AsyncClient) -> None:
        async with opening_slots:
            episode, home = await reset(http, {"route": ROUTE_PLAN, "recording": RECORDING})
            episodes.append(episode)
            homes[home or "?"] = homes.get(home or "?", 0) + 1
            opening.append(await step(http, episode, "real", action("real", 0)))
        ready[0] += 1
        if ready[0] == sessions:
            window.append(time.perf_counter())
            opened.set()
        await opened.wait()
        for kind, body in plan(index, calls):
            answer = await step(http, episode, kind, body)
            moved[0] += answer.replica != home
            timed.append(answer)
        window.append(time.perf_counter())
        (await http.delete(f"/episodes/{episode}")).raise_for_status()

    async with client(target, sessions) as http:
        await asyncio.gather(*(session(index, http) for index in range(sessions)))
    answered = [s.record_id for s in [*opening, *timed] if s.record_id]
    result = await asyncio.to_thread(audit, target, started_wall, episodes, answered)
    explain(target.name, [*opening, *timed], result.lost_ids)
    return Run(target.name, timed, max(window) - min(window), opening, result, moved[0], homes, load)


def explain(target: str, steps: list[Step], lost_ids: list[str]) -> None:
    """What went wrong, in a few lines: the distinct errors, and the answers whose record is missing."""
    seen: dict[str, int] = {}
    for s in steps:
        if s.error is not None:
            seen[f"{s.error}: {s.detail}"] = seen.get(f"{s.error}: {s.detail}", 0) + 1
    for text, count in sorted(seen.items(), key=lambda item: -item[1])[:5]:
        print(f"    {target}: {count} x {text}")
    lost = set(lost_ids)
    for s in steps:
        if s.record_id in lost:
            print(
                f"    {target}: record {s.record_id} lost; its answer: "
                f"{s.kind}, {s.error or 'ok'} {s.detail} ({s.ms:.0f} ms)"
            )


def describe(run: Run) -> str:
    kinds = "  ".join(
        f"{kind} p50 {percentile(ms, 0.5):.1f}" for kind in KINDS if (ms := [s.ms for s in run.steps if s.kind == kind])
    )
    return (
        f"{run.target:11} {len(run.steps) / run.elapsed_s:8.1f} calls/s  p50 {percentile(run.ms, 0.5):7.2f} ms  p99 "
        f"{percentile(run.ms, 0.99):7.2f} ms  errors {run.errors} {run.error_kinds() or ''} moved {run.moved}  "
        f"records: {run.audit.describe()}  [{kinds}]  opening p50 "
        f"{percentile([s.ms for s in run.opening], 0.5):.0f} ms  "
        f"sessions per replica {run.per_replica}  load {run.load}"
    )


@dataclass
class Pooled:
    target: str
    runs: list[Run]

    @property
    def ms(self) -> list[float]:
        return [ms for run in self.runs for ms in run.ms]

    @property
    def throughput(self) -> float:
        return sum(len(r.steps) for r in self.runs) / sum(r.elapsed_s for r in self.runs)

    def p(self, q: float) -> float:
        return percentile(self.ms, q)

    def total(self, what: str) -> int:
        return sum(getattr(r, what) if what in ("errors", "moved") else getattr(r.audit, what) for r in self.runs)


async def measure(options: argparse.Namespace, token: str) -> list[Run]:
    runs: list[Run] = []
    replays = math.ceil(options.calls / len(KINDS))
    with (
        tempfile.TemporaryDirectory(prefix="simroute-bench-") as folder,
        stack(token) as deployed,
        baseline(Path(folder), token) as direct,
    ):
        for target in (direct, deployed):
            if target is deployed:
                deployed.scale(options.replicas[0])
            ids = await record(target, replays)
            print(f"{target.name}: recorded {len(ids)} real answers under {RECORDING!r}   load {load_average()}")
        for repeat in range(options.repeats):
            print(f"\nround {repeat + 1} of {options.repeats}:")
            for target, replicas in [(direct, 0), *((deployed, n) for n in options.replicas)]:
                if replicas:
                    deployed.scale(replicas)
                runs.append(await run_sessions(target, options.sessions, options.calls, options.opening_at_once))
                print("  " + describe(runs[-1]))
    return runs


def report(options: argparse.Namespace, runs: list[Run]) -> None:
    targets = list(dict.fromkeys(r.target for r in runs))
    pooled = {name: Pooled(name, [r for r in runs if r.target == name]) for name in targets}
    base = pooled["baseline"]
    print(f"\n{options.sessions} sessions x {options.calls} calls, {options.repeats} run(s) each, pooled:")
    print(
        f"{'target':12} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'p99/base':>9} {'errors':>7} {'moved':>6} "
        f"{'lost':>5} {'dup':>4} {'incompl':>8}"
    )
    for p in pooled.values():
        print(
            f"{p.target:12} {p.throughput:9.1f} {p.p(0.5):8.2f} {p.p(0.99):8.2f} {p.p(0.99) / base.p(0.99):9.2f} "
            f"{p.total('errors'):7d} "
            f"{p.total('moved'):6d} {p.total('lost'):5d} {p.total('duplicated'):4d} {p.total('incomplete'):8d}"
        )
    stacks = [p for p in pooled.values() if p is not base]
    if len(stacks) >= 2:
        print(
            f"throughput {stacks[-1].target} / {stacks[0].target}: "
            f"{stacks[-1].throughput / stacks[0].throughput:.2f}x (2 cores shared by everything)"
        )
    print("targets: 0 errors, 0 records lost, stack p99 <= 2x baseline p99")
    if options.smoke:
        return
    rows = []
    for p in pooled.values():
        rows += [
            row(f"{p.target}: calls/s", p.throughput, "calls/s", better="higher"),
            row(f"{p.target}: round trip p50", p.p(0.5), "ms", better="lower"),
            row(f"{p.target}: round trip p99", p.p(0.99), "ms", better="lower"),
            row(f"{p.target}: errors", p.total("errors"), "calls", target="== 0", better="lower"),
            row(f"{p.target}: records lost", p.total("lost"), "records", target="== 0", better="lower"),
            row(
                f"{p.target}: records duplicated or extra",
                p.total("duplicated"),
                "records",
                target="== 0",
                better="lower",
            ),
        ]
        if p is not base:
            rows.append(
                row(
                    f"{p.target}: p99 / baseline p99",
                    p.p(0.99) / base.p(0.99),
                    "x",
                    baseline="one simroute serve, same work",
                    target="<= 2",
                    better="lower",
                )
            )
    if len(stacks) >= 2:
        rows.append(
            row(
                f"throughput {stacks[-1].target} / {stacks[0].target}",
                stacks[-1].throughput / stacks[0].throughput,
                "x",
                baseline="2 cores",
                better="higher",
            )
        )
    title = (
        f"{options.sessions} sessions x {options.calls} mixed calls (real, sim by an instant world-model stub, "
        "replay) through the compose stack's balancer vs one simroute serve"
    )
    write_results(__file__, title, rows)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument(
        "--replicas", default="1,2", help="replica counts, comma-separated, run in this order each round"
    )
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--opening-at-once", type=int, default=OPENING_AT_ONCE, help="sessions opening at a time")
    add_smoke_flag(parser)
    options = parser.parse_args()
    if options.smoke:
        options.sessions, options.calls, options.repeats = 3, 6, 1
    options.replicas = [int(n) for n in options.replicas.split(",")]
    print(f"load average at start: {load_average()} (1, 5, 15 min)")
    runs = await measure(options, secrets.token_hex(24))
    report(options, runs)


if __name__ == "__main__":
    asyncio.run(main())
