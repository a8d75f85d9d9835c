"""Per-call cost of simroute's MCP front door against a direct client and a minimal fastmcp proxy.

N sequential `tools/call get_current_time {"timezone": "Asia/Tokyo"}` calls to the
real `mcp-server-time` (an stdio upstream in every variant):

  A         fastmcp Client straight to the upstream over stdio
  B         minimal proxy, `create_proxy(config)` (benchmarks/_baseline_proxy.py --mode config);
            fastmcp builds a fresh backend client, hence a fresh upstream MCP session, per request
  B'        warm-session baseline, `create_proxy(connected_client)` (--mode warm): every request
            reuses one upstream session, as simroute does
  C         simroute launched as a user does (`simroute mcp --config CFG`, real mode):
            routing decision, input-schema check, record write and `_meta.simroute` included

B, B' and C are measured with the agent side on stdio and on streamable HTTP.
Each round runs every variant once, in an order rotated by one per round, so
that drift on the machine (thermal, other load) spreads over all variants. Every
run starts its own server process and stops it after. The headline figure is the
median over rounds of each round's mean ms/call; p50/p95 pool the individual
calls of all rounds.

Usage: python benchmarks/mcp_proxy_overhead.py [--calls 500] [--rounds 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import IO, Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

HERE = Path(__file__).resolve().parent
BASELINE_PROXY = HERE / "_baseline_proxy.py"
# The console script beside this interpreter: simroute as the user runs it.
SIMROUTE = Path(sys.executable).parent / "simroute"
UPSTREAM = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
TOOL = "get_current_time"
ARGUMENTS = {"timezone": "Asia/Tokyo"}
WARMUP_CALLS = 20


@dataclass(frozen=True)
class Variant:
    label: str
    transport: str  # "stdio" or "http": how the benchmark client reaches the server
    command: list[str]  # the server's command line; HTTP variants get `--http HOST:PORT` appended
    is_simroute: bool = False


def build_variants(config: Path) -> list[Variant]:
    """In table order."""
    baseline = [sys.executable, str(BASELINE_PROXY)]
    simroute = [str(SIMROUTE), "mcp", "--config", str(config)]
    return [
        Variant("A", "stdio", UPSTREAM),
        Variant("B-stdio", "stdio", [*baseline, "--mode", "config"]),
        Variant("B'-stdio", "stdio", [*baseline, "--mode", "warm"]),
        Variant("C-stdio", "stdio", simroute, is_simroute=True),
        Variant("B-http", "http", [*baseline, "--mode", "config"]),
        Variant("B'-http", "http", [*baseline, "--mode", "warm"]),
        Variant("C-http", "http", simroute, is_simroute=True),
    ]


# --- server processes -------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def wait_for_port(port: int, process: subprocess.Popen, timeout_s: float = 60.0) -> None:
    """Until the server accepts connections; fails fast if it died on the way."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server {process.args!r} exited with {process.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            await asyncio.sleep(0.05)
    raise RuntimeError(f"nothing listened on 127.0.0.1:{port} within {timeout_s:.0f}s")


def stop_process(process: subprocess.Popen) -> None:
    """terminate + wait; SIGKILL to the process group only if it does not go.
    The group is ours: the server was started in a session of its own."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(15)
            return
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


@asynccontextmanager
async def http_server(command: list[str], log: IO[str]) -> AsyncIterator[str]:
    """A server process on a free local port; yields its MCP endpoint URL."""
    port = free_port()
    process = subprocess.Popen(
        [*command, "--http", f"127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,  # so a stuck server can be killed with its whole group
    )
    try:
        await wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)


@asynccontextmanager
async def connect(variant: Variant, log: IO[str], mode: str) -> AsyncIterator[Client]:
    """A connected client for one run of `variant`; its server lives exactly as long.
    Stdio servers are children of the client transport, which closes their stdin
    and, failing that, kills their process tree when the block exits."""
    if variant.transport == "stdio":
        transport = StdioTransport(variant.command[0], variant.command[1:], keep_alive=False, log_file=log)
        async with Client(transport, mode=mode) as client:
            yield client
        return
    async with http_server(variant.command, log) as url:
        async with Client(StreamableHttpTransport(url), mode=mode) as client:
            yield client


# --- timing -----------------------------------------------------------------


def check_result(variant: Variant, result) -> None:
    """A wrong answer timed fast is no result: the warm-up calls must be real answers."""
    text = " ".join(getattr(block, "text", "") for block in result.content)
    if "Asia/Tokyo" not in text:
        raise RuntimeError(f"{variant.label}: unexpected result {text[:200]!r}")
    if variant.is_simroute:
        meta = (result.meta or {}).get("simroute", {})
        if meta.get("provenance") != "real" or not meta.get("record_id"):
            raise RuntimeError(f"{variant.label}: expected a real, recorded call, got _meta.simroute={meta!r}")


async def run_once(variant: Variant, calls: int, log: IO[str], mode: str) -> tuple[list[float], str | None]:
    """Per-call milliseconds of one run, and the protocol version the client negotiated."""
    async with connect(variant, log, mode) as client:
        await client.list_tools()
        for _ in range(WARMUP_CALLS):  # upstream session up, caches and validators filled
            check_result(variant, await client.call_tool(TOOL, ARGUMENTS))
        samples = []
        for _ in range(calls):
            started = time.perf_counter_ns()
            await client.call_tool(TOOL, ARGUMENTS)
            samples.append((time.perf_counter_ns() - started) / 1e6)
        return samples, client.protocol_version


def summarize(rounds: list[list[float]]) -> dict[str, Any]:
    pooled = [sample for samples in rounds for sample in samples]
    return {
        "median_ms_per_call": statistics.median(statistics.fmean(samples) for samples in rounds),
        "round_means_ms": [statistics.fmean(samples) for samples in rounds],
        "p50_ms": statistics.median(pooled),
        "p95_ms": statistics.quantiles(pooled, n=20)[18],
    }


def count_records(store: Path) -> int:
    if not store.exists():
        return 0
    with closing(sqlite3.connect(store)) as db:
        return db.execute("SELECT COUNT(*) FROM records").fetchone()[0]


# --- report -----------------------------------------------------------------


def print_table(variants: list[Variant], results: dict[str, dict], ratios: dict[str, dict[str, float]]) -> None:
    header = f"{'variant':10} {'median ms/call':>14} {'p50 ms':>8} {'p95 ms':>8} {"C/B":>7} {"C/B'":>7}  protocol"
    print(header)
    print("-" * len(header))
    for variant in variants:
        row = results[variant.label]
        ratio = ratios.get(variant.transport) if variant.is_simroute else None
        c_b = f"{ratio['C/B']:7.3f}" if ratio else " " * 7
        c_bw = format(ratio["C/B'"], "7.3f") if ratio else " " * 7
        print(
            f"{variant.label:10} {row['median_ms_per_call']:14.3f} {row['p50_ms']:8.3f} {row['p95_ms']:8.3f} "
            f"{c_b} {c_bw}  {row['protocol'] or '?'}"
        )


async def benchmark(options: argparse.Namespace, workdir: Path) -> dict:
    # A SIGTERM would end Python without unwinding, leaving the HTTP servers running:
    # turn it into a cancellation, which stops them on the way out (as Ctrl-C does).
    main_task = asyncio.current_task()
    assert main_task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)

    store = workdir / "records.db"
    config = workdir / "simroute.yaml"
    # JSON is YAML: no quoting surprises for paths.
    config.write_text(
        json.dumps(
            {
                "mode": "real",
                "mcpServers": {"time": {"command": UPSTREAM[0], "args": UPSTREAM[1:]}},
                "store": {"path": str(store)},
            },
            indent=2,
        )
    )
    variants = build_variants(config)
    samples: dict[str, list[list[float]]] = {v.label: [] for v in variants}
    protocols: dict[str, str | None] = {}

    with (workdir / "servers.log").open("a", encoding="utf-8") as log:
        for round_index in range(options.rounds):
            shift = round_index % len(variants)
            for variant in variants[shift:] + variants[:shift]:
                print(f"{variant.label} ", end="", file=sys.stderr, flush=True)
                log.write(f"\n=== round {round_index + 1}: {variant.label}: {' '.join(variant.command)}\n")
                log.flush()
                run, protocols[variant.label] = await run_once(variant, options.calls, log, options.client_mode)
                samples[variant.label].append(run)
            print(f"- round {round_index + 1}/{options.rounds} done", file=sys.stderr, flush=True)

    results = {label: {**summarize(rounds), "protocol": protocols[label]} for label, rounds in samples.items()}
    ratios = {
        transport: {
            "C/B": results[f"C-{transport}"]["median_ms_per_call"] / results[f"B-{transport}"]["median_ms_per_call"],
            "C/B'": results[f"C-{transport}"]["median_ms_per_call"] / results[f"B'-{transport}"]["median_ms_per_call"],
        }
        for transport in ("stdio", "http")
    }
    simroute_runs = sum(1 for v in variants if v.is_simroute) * options.rounds
    expected = simroute_runs * (WARMUP_CALLS + options.calls)
    recorded = count_records(store)
    spool = store.with_suffix(".spool.jsonl")
    spooled = len(spool.read_text().splitlines()) if spool.exists() else 0

    print(
        f"\n{options.calls} sequential {TOOL} calls per run, {options.rounds} interleaved rounds; "
        f"mcp-server-time {version('mcp-server-time')} upstream over stdio; "
        f"fastmcp {version('fastmcp')}, mcp {version('mcp')}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; client mode {options.client_mode}\n"
    )
    print_table(variants, results, ratios)
    print(
        "\nmedian ms/call: median over rounds of each run's mean; p50/p95: all timed calls of all rounds."
        "\nC/B, C/B': simroute's median ms/call over the baseline's on the same transport."
    )
    verdict = "ok" if recorded == expected and not spooled else "MISMATCH"
    print(
        f"\nsimroute records in the store: {recorded} (expected {expected} = {simroute_runs} runs x "
        f"({WARMUP_CALLS} warm-up + {options.calls} timed) calls): {verdict}"
        + (f"; {spooled} record(s) left in the spool {spool}" if spooled else "")
    )
    return {
        "calls": options.calls,
        "rounds": options.rounds,
        "warmup_calls": WARMUP_CALLS,
        "client_mode": options.client_mode,
        "versions": {
            "python": platform.python_version(),
            "fastmcp": version("fastmcp"),
            "mcp": version("mcp"),
            "mcp-server-time": version("mcp-server-time"),
        },
        "cpus": os.cpu_count(),
        "results": results,
        "ratios": ratios,
        "records": {"recorded": recorded, "expected": expected, "spooled": spooled},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500, help="timed calls per run (default 500)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    # "auto" is what an agent's fastmcp client does: the stateless 2026 era where the
    # server offers it (A, B, B'), the handshake era with simroute, which refuses
    # `server/discover`. "legacy" puts every variant on the handshake era, so the
    # protocol is the same across rows.
    parser.add_argument(
        "--client-mode",
        choices=["auto", "legacy"],
        default="auto",
        help="protocol-era negotiation of the benchmark client (default auto)",
    )
    options = parser.parse_args()
    if options.calls < 2 or options.rounds < 1:
        parser.error("--calls must be at least 2 and --rounds at least 1")
    if not SIMROUTE.exists():
        parser.error(f"{SIMROUTE} is missing: run scripts/setup.sh")

    workdir = Path(tempfile.mkdtemp(prefix="simroute-proxy-bench-"))
    try:
        report = asyncio.run(benchmark(options, workdir))
    except (KeyboardInterrupt, asyncio.CancelledError):
        print(f"\ninterrupted; server logs kept in {workdir / 'servers.log'}", file=sys.stderr)
        sys.exit(130)
    except BaseException:
        # Keep the servers' logs for the post-mortem.
        print(f"\nbenchmark failed; server logs kept in {workdir / 'servers.log'}", file=sys.stderr)
        raise
    shutil.rmtree(workdir, ignore_errors=True)
    if options.json:
        options.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
