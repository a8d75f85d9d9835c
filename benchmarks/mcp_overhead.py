"""Per-call cost of simroute's MCP front door against baselines, same run, same machine.

500 sequential `get_current_time` calls to the real `mcp-server-time`:
  A        client straight to the upstream over stdio
  B        a minimal fastmcp proxy: `create_proxy(config).run()`
  B-warm   the same proxy given one connected client (one warm upstream session)
  C        simroute, real route: decision, record and _meta included
  C-auth   (with --auth, HTTP only) simroute with a token configured: every request
           carries `Authorization: Bearer` and is checked, the session namespaced
B, B-warm and C are measured with the agent side on stdio and on streamable HTTP.
Rounds interleave the variants (rotating order); the figure is the median over
rounds of each round's mean ms/call.

By default clients negotiate the protocol era automatically: A and B then speak
the stateless 2026-07-28 era, while simroute keeps agents on the session-based
handshake era. `--client-mode legacy` puts every row on the handshake era, for a
same-protocol comparison.

Usage: python benchmarks/mcp_overhead.py [--calls 500] [--rounds 5] [--client-mode auto|legacy] [--auth]
                                         [--json out.json] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import asynccontextmanager
from pathlib import Path

from _results import add_smoke_flag, row, write_results
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

from router.cli.launch import free_port, stop, wait_for_port

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "_baseline_proxy.py"
SIMROUTE = str(Path(sys.executable).parent / "simroute")
UPSTREAM = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
ARGS = {"timezone": "Asia/Tokyo"}
TOKEN = "benchmark-token-0123456789abcdef"


@asynccontextmanager
async def http_server(command: list[str]):
    """Run a server process listening on a free port; yields its MCP URL."""
    port = free_port()
    process = subprocess.Popen(
        [*command, "--http", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


def variants(config: Path, auth_config: Path | None) -> dict[str, list[str]]:
    """Each variant's server command (stdio form; `--http` is appended for HTTP)."""
    commands = {
        "B": [sys.executable, str(BASELINE), "--mode", "config"],
        "B-warm": [sys.executable, str(BASELINE), "--mode", "warm"],
        "C": [SIMROUTE, "mcp", "--config", str(config)],
    }
    if auth_config is not None:
        commands["C-auth"] = [SIMROUTE, "mcp", "--config", str(auth_config)]
    return commands


async def time_calls(client: Client, calls: int) -> list[float]:
    await client.list_tools()
    for _ in range(20):  # warm-up: upstream started, caches filled
        await client.call_tool("get_current_time", ARGS)
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await client.call_tool("get_current_time", ARGS)
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def child_environment() -> dict[str, str]:
    """What an MCP client passes a stdio server, plus PYTHONPATH when set: a checkout
    other than the installed one (a worktree) is then the code measured."""
    from mcp.client.stdio import get_default_environment

    env = get_default_environment()
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


async def run_variant(name: str, transport: str, command: list[str] | None, calls: int, mode: str) -> list[float]:
    if name == "A":
        client = Client(StdioTransport(UPSTREAM[0], UPSTREAM[1:], keep_alive=False), mode=mode)
        async with client:
            return await time_calls(client, calls)
    assert command is not None
    if transport == "stdio":
        async with Client(
            StdioTransport(command[0], command[1:], env=child_environment(), keep_alive=False), mode=mode
        ) as client:
            return await time_calls(client, calls)
    headers = {"Authorization": f"Bearer {TOKEN}"} if name == "C-auth" else None
    async with http_server(command) as url:
        async with Client(StreamableHttpTransport(url, headers=headers), mode=mode) as client:
            return await time_calls(client, calls)


def load_text() -> str:
    """The machine's load average (1, 5, 15 min): the figures mean little without it."""
    return ", ".join(f"{load:.2f}" for load in os.getloadavg())


def summarize(samples_by_round: list[list[float]]) -> dict[str, float]:
    everything = [s for samples in samples_by_round for s in samples]
    return {
        "median_ms": statistics.median(statistics.fmean(samples) for samples in samples_by_round),
        "p50_ms": statistics.median(everything),
        "p95_ms": statistics.quantiles(everything, n=20)[18],
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--client-mode", choices=["auto", "legacy"], default="auto")
    parser.add_argument("--auth", action="store_true", help="add simroute with a token (C-auth, HTTP)")
    parser.add_argument("--json", type=Path)
    add_smoke_flag(parser)
    options = parser.parse_args()
    if options.smoke:
        options.calls, options.rounds = 10, 1

    workdir = Path(tempfile.mkdtemp(prefix="simroute-bench-"))
    store = workdir / "records.db"
    config = workdir / "simroute.yaml"
    # The same work as the baseline proxies: one upstream. simroute's own shell and browser
    # channels are off, so their warm pool and Chromium do not start during the rounds.
    base = {
        "mode": "real",
        "mcpServers": {"time": {"command": UPSTREAM[0], "args": UPSTREAM[1:]}},
        "store": {"path": str(store)},
        "shell": {"enabled": False},
        "browser": {"enabled": False},
    }
    config.write_text(json.dumps(base))
    auth_config = None
    if options.auth:
        auth_config = workdir / "simroute-auth.yaml"
        auth_config.write_text(
            json.dumps(
                {**base, "store": {"path": str(workdir / "records-auth.db")}, "service": {"tokens": {"bench": TOKEN}}}
            )
        )

    commands = variants(config, auth_config)
    plan = [("A", "stdio")] + [
        (name, transport)
        for transport in ("stdio", "http")
        for name in commands
        if not (name == "C-auth" and transport == "stdio")
    ]
    samples: dict[tuple[str, str], list[list[float]]] = {key: [] for key in plan}
    load_at_start = load_text()
    for round_index in range(options.rounds):
        shift = round_index % len(plan)
        for name, transport in plan[shift:] + plan[:shift]:
            samples[(name, transport)].append(
                await run_variant(name, transport, commands.get(name), options.calls, options.client_mode)
            )
        print(f"round {round_index + 1}/{options.rounds} done", file=sys.stderr)

    results = {f"{name}/{transport}": summarize(rounds) for (name, transport), rounds in samples.items()}
    with sqlite3.connect(store) as db:
        recorded = db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    expected = 2 * options.rounds * (options.calls + 20)

    print(
        f"\n{options.calls} sequential calls x {options.rounds} interleaved rounds, mcp-server-time over stdio "
        f"upstream, client mode {options.client_mode}"
    )
    print(f"load average at start {load_at_start}, at end {load_text()} (1, 5, 15 min; {os.cpu_count()} CPUs)\n")
    print(f"{'variant':16} {'median ms/call':>15} {'p50':>8} {'p95':>8}")
    for key, figures in results.items():
        print(f"{key:16} {figures['median_ms']:15.3f} {figures['p50_ms']:8.3f} {figures['p95_ms']:8.3f}")
    print()
    direct = results["A/stdio"]["median_ms"]
    for transport in ("stdio", "http"):
        c, b = results[f"C/{transport}"]["median_ms"], results[f"B/{transport}"]["median_ms"]
        print(
            f"{transport:5}: C/B = {c / b:.3f}   C/B-warm = "
            f"{c / results[f'B-warm/{transport}']['median_ms']:.3f}   (target C/B <= 1.1)"
        )
        print(
            f"       over direct (A): simroute adds {c - direct:.3f} ms/call, the stock proxy (B) adds "
            f"{b - direct:.3f} ms/call"
        )
    if options.auth:
        c_auth = results["C-auth/http"]["median_ms"]
        print(
            f"http : C-auth/B = {c_auth / results['B/http']['median_ms']:.3f}   C-auth/C = "
            f"{c_auth / results['C/http']['median_ms']:.3f}   (target C-auth/B <= 1.1)"
        )
    print(f"\nsimroute recorded {recorded} calls (expected {expected})")
    if options.json:
        options.json.write_text(
            json.dumps(
                {"results": results, "recorded": recorded, "expected": expected, "load": [load_at_start, load_text()]},
                indent=2,
            )
        )
    if not options.smoke:
        write_results(
            __file__,
            "Per-call cost of the MCP front door against a minimal fastmcp proxy",
            result_rows(results, recorded, expected),
        )


def result_rows(results: dict[str, dict[str, float]], recorded: int, expected: int) -> list[dict]:
    """The printed figures as results rows: each variant's ms/call, then the ratios with their targets."""
    rows = [
        row(f"{key} median ms/call", figures["median_ms"], "ms", better="lower") for key, figures in results.items()
    ]
    for transport in ("stdio", "http"):
        c = results[f"C/{transport}"]["median_ms"]
        rows.append(
            row(
                f"C/B ({transport})",
                c / results[f"B/{transport}"]["median_ms"],
                "ratio",
                baseline=f"B: a minimal fastmcp proxy, create_proxy(config), {transport}",
                target="<= 1.1",
                better="lower",
            )
        )
        rows.append(
            row(
                f"C/B-warm ({transport})",
                c / results[f"B-warm/{transport}"]["median_ms"],
                "ratio",
                baseline=f"B-warm: the fastmcp proxy with one warm upstream session, {transport}",
                better="lower",
            )
        )
    if "C-auth/http" in results:
        c_auth = results["C-auth/http"]["median_ms"]
        rows.append(
            row(
                "C-auth/B (http)",
                c_auth / results["B/http"]["median_ms"],
                "ratio",
                baseline="B: a minimal fastmcp proxy, create_proxy(config), http",
                target="<= 1.1",
                better="lower",
            )
        )
        rows.append(
            row(
                "C-auth/C (http)",
                c_auth / results["C/http"]["median_ms"],
                "ratio",
                baseline="C: simroute without a token, http",
                better="lower",
            )
        )
    rows.append(
        row("calls recorded by simroute", recorded, "records", baseline=f"{expected} calls made", better="higher")
    )
    return rows


if __name__ == "__main__":
    asyncio.run(main())
