"""Calls while another process holds the SQLite write lock, against the same calls
unloaded, same run, interleaved.

`simroute serve` (MCP over streamable HTTP in front of mcp-server-time, and the
HTTP proxy in front of a local JSON upstream) takes calls on both channels at
once. Windows alternate: unloaded, then loaded (another process holds `BEGIN
IMMEDIATE` on the record store for 5 s), for --rounds rounds. Records written
while the lock is held go to the spool and are flushed when it frees: the
store's count must equal the calls made.
Target: p99 of loaded calls <= 2x unloaded, per channel.

Usage: python benchmarks/store_lock.py [--rounds 2] [--window 5] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx2 as httpx
from _results import add_smoke_flag, row, write_results
from fastmcp import Client

from router.cli.launch import free_port, stop, wait_for_port

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.99) - 1)] * 1000


def hold_lock(db: Path, seconds: float, ready: threading.Event) -> None:
    connection = sqlite3.connect(db, isolation_level=None, timeout=30)
    connection.execute("BEGIN IMMEDIATE")
    ready.set()
    time.sleep(seconds)
    connection.execute("COMMIT")
    connection.close()


async def mcp_calls(url: str, until: float, out: list[float]) -> None:
    async with Client(url) as client:
        while time.monotonic() < until:
            started = time.perf_counter()
            await client.call_tool("get_current_time", {"timezone": "UTC"})
            out.append(time.perf_counter() - started)


def http_calls(proxy: str, url: str, until: float, out: list[float]) -> None:
    with httpx.Client(proxy=proxy, timeout=30, trust_env=False) as client:
        while time.monotonic() < until:
            started = time.perf_counter()
            response = client.get(url)
            assert response.status_code == 200, response.text[:200]
            out.append(time.perf_counter() - started)


async def window(mcp_url: str, proxy: str, upstream_url: str, seconds: float) -> tuple[list[float], list[float]]:
    until = time.monotonic() + seconds
    mcp_latencies: list[float] = []
    http_latencies: list[float] = []
    http_thread = asyncio.to_thread(http_calls, proxy, upstream_url, until, http_latencies)
    await asyncio.gather(mcp_calls(mcp_url, until, mcp_latencies), http_thread)
    return mcp_latencies, http_latencies


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--window", type=float, default=5.0)
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.window = 1, 1.0
    with tempfile.TemporaryDirectory() as tmp:
        upstream = subprocess.Popen(
            [sys.executable, str(HERE / "_http_upstream.py")], stdout=subprocess.PIPE, text=True
        )
        upstream_url = f"http://127.0.0.1:{int(upstream.stdout.readline())}/data"
        db = Path(tmp) / "records.db"
        config = Path(tmp) / "simroute.yaml"
        config.write_text(
            json.dumps(
                {
                    "store": {"path": str(db)},
                    "shell": {"enabled": False},
                    "browser": {"enabled": False},
                    "http": {"ca_dir": f"{tmp}/ca"},
                    "mcpServers": {
                        "time": {
                            "command": sys.executable,
                            "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
                        }
                    },
                }
            )
        )
        mcp_port, proxy_port = free_port(), free_port()
        serve = subprocess.Popen(
            [
                str(BIN / "simroute"),
                "serve",
                "--config",
                str(config),
                "--mcp",
                f"127.0.0.1:{mcp_port}",
                "--http-proxy",
                str(proxy_port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_for_port(mcp_port, serve, timeout_s=60)
            wait_for_port(proxy_port, serve, timeout_s=60)
            mcp_url, proxy = f"http://127.0.0.1:{mcp_port}/mcp", f"http://127.0.0.1:{proxy_port}"
            warm = await window(mcp_url, proxy, upstream_url, 1.0)  # warm: upstream session, store open
            figures = {"unloaded": ([], []), "loaded": ([], [])}
            for _ in range(args.rounds):
                for phase in ("unloaded", "loaded"):
                    holder = None
                    if phase == "loaded":
                        ready = threading.Event()
                        holder = threading.Thread(target=hold_lock, args=(db, args.window, ready))
                        holder.start()
                        ready.wait()
                    mcp_l, http_l = await window(mcp_url, proxy, upstream_url, args.window)
                    figures[phase][0].extend(mcp_l)
                    figures[phase][1].extend(http_l)
                    if holder is not None:
                        holder.join()
                    await asyncio.sleep(1.0)  # the spool flushes
            made = sum(len(m) + len(h) for m, h in (*figures.values(), warm))
            await asyncio.sleep(1.0)
        finally:
            stop(serve)
            upstream.kill()
        stored = sqlite3.connect(db).execute("SELECT COUNT(*) FROM records").fetchone()[0]
    print(
        f"{'channel':8} {'calls unloaded':>15} {'p99 unloaded ms':>16} {'calls loaded':>13} {'p99 loaded ms':>14} "
        f"{'loaded/unloaded':>16}"
    )
    rows = []
    for index, channel in enumerate(("mcp", "http")):
        unloaded, loaded = figures["unloaded"][index], figures["loaded"][index]
        ratio = p99(loaded) / p99(unloaded)
        print(
            f"{channel:8} {len(unloaded):15} {p99(unloaded):16.2f} {len(loaded):13} {p99(loaded):14.2f} {ratio:16.2f}"
        )
        rows.append(row(f"{channel} p99 unloaded", p99(unloaded), "ms", better="lower"))
        rows.append(row(f"{channel} p99 while another process holds the write lock", p99(loaded), "ms", better="lower"))
        rows.append(
            row(
                f"{channel} p99 loaded / unloaded",
                ratio,
                "ratio",
                baseline="the same calls with the store unlocked, alternating windows",
                target="<= 2",
                better="lower",
            )
        )
    print(
        f"\ncalls made {made}, records in the store after the flush "
        f"{stored}  (target: p99 loaded/unloaded <= 2, no record lost)"
    )
    if not args.smoke:
        rows.append(
            row("records lost", made - stored, "records", baseline=f"{made} calls made", target="== 0", better="lower")
        )
        write_results(__file__, "Calls while another process holds the SQLite write lock", rows)


if __name__ == "__main__":
    asyncio.run(main())
