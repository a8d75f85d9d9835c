"""Per-request cost of simroute's HTTP channel against plain mitmdump, same run, same machine.

2,000 sequential GETs (a small JSON answer) from one keep-alive httpx client:
  direct     client straight to the upstream
  mitmdump   through plain `mitmdump` (the binary beside this Python), pass-through
  simroute   through `simroute http-proxy`, real route: decision, record and headers included
  simroute-auth  (with --auth) the same with SIMROUTE_TOKEN set: every request carries
             Proxy-Authorization session:token, checked, its session namespaced
Rounds interleave the variants (rotating order); the figure is the median over rounds
of each round's mean ms/request. The upstream runs in its own process.

Usage: python benchmarks/http_overhead.py [--requests 2000] [--rounds 5] [--auth] [--json out.json] [--smoke]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2 as httpx
from _results import add_smoke_flag, row, write_results

from router.cli.launch import free_port, stop, wait_for_port

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
TOKEN = "benchmark-token-0123456789abcdef"


def run_round(client: httpx.Client, url: str, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        response = client.get(url)
        if response.status_code != 200:
            raise RuntimeError(f"{url}: {response.status_code} {response.text[:200]}")
    return (time.perf_counter() - started) * 1000 / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000, help="requests per variant, over all rounds")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--auth", action="store_true", help="add simroute with a token (simroute-auth)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        args.requests, args.rounds = 20, 1
    per_round = max(1, args.requests // args.rounds)

    processes: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            upstream = subprocess.Popen(
                [sys.executable, str(HERE / "_http_upstream.py")], stdout=subprocess.PIPE, text=True
            )
            processes.append(upstream)
            upstream_port = int(upstream.stdout.readline())
            url = f"http://127.0.0.1:{upstream_port}/data?x=1"

            mitm_port = free_port()
            mitmdump = subprocess.Popen(
                [
                    str(BIN / "mitmdump"),
                    "-q",
                    "--listen-host",
                    "127.0.0.1",
                    "-p",
                    str(mitm_port),
                    "--set",
                    "confdir=" + tmp + "/mitm",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            processes.append(mitmdump)

            def start_simroute(name: str, env: dict[str, str]) -> int:
                config = Path(tmp) / f"{name}.yaml"
                config.write_text(
                    json.dumps(
                        {
                            "store": {"path": f"{tmp}/{name}.db"},
                            "shell": {"enabled": False},
                            "browser": {"enabled": False},
                            "http": {"ca_dir": f"{tmp}/ca"},
                        }
                    )
                )
                port = free_port()
                process = subprocess.Popen(
                    [str(BIN / "simroute"), "http-proxy", "--config", str(config), "--port", str(port)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env={**{k: v for k, v in os.environ.items() if k != "SIMROUTE_TOKEN"}, **env},
                )
                processes.append(process)
                wait_for_port(port, process, timeout_s=60)
                return port

            simroute_port = start_simroute("simroute", {})
            wait_for_port(mitm_port, mitmdump, timeout_s=60)

            clients = {
                "direct": httpx.Client(timeout=30, trust_env=False),
                "mitmdump": httpx.Client(proxy=f"http://127.0.0.1:{mitm_port}", timeout=30, trust_env=False),
                "simroute": httpx.Client(proxy=f"http://127.0.0.1:{simroute_port}", timeout=30, trust_env=False),
            }
            if args.auth:
                auth_port = start_simroute("simroute-auth", {"SIMROUTE_TOKEN": TOKEN})
                clients["simroute-auth"] = httpx.Client(
                    proxy=f"http://bench:{TOKEN}@127.0.0.1:{auth_port}", timeout=30, trust_env=False
                )
            for client in clients.values():  # warm up: connections, code paths, the CA
                run_round(client, url, 50)
            results: dict[str, list[float]] = {name: [] for name in clients}
            names = list(clients)
            for r in range(args.rounds):
                order = names[r % len(names) :] + names[: r % len(names)]
                for name in order:
                    results[name].append(run_round(clients[name], url, per_round))
            for client in clients.values():
                client.close()
            recorded = {
                name: sqlite3.connect(f"{tmp}/{name}.db").execute("SELECT COUNT(*) FROM records").fetchone()[0]
                for name in clients
                if name.startswith("simroute")
            }
        finally:
            for process in processes:
                stop(process)

    figures = {name: statistics.median(values) for name, values in results.items()}
    ratio = figures["simroute"] / figures["mitmdump"]
    print(f"{per_round * args.rounds} requests per variant, {args.rounds} interleaved rounds, one keep-alive client")
    for name, value in figures.items():
        spread = ", ".join(f"{v:.3f}" for v in results[name])
        print(f"  {name:13} {value:7.3f} ms/request   (rounds: {spread})")
    print(f"  records written: {recorded}")
    print(f"simroute / mitmdump = {ratio:.2f}   (target <= 1.2)")
    if "simroute-auth" in figures:
        print(f"simroute-auth / mitmdump = {figures['simroute-auth'] / figures['mitmdump']:.2f}   (target <= 1.2)")
    if args.json:
        args.json.write_text(
            json.dumps({"ms_per_request": figures, "rounds": results, "ratio": ratio, "records": recorded}, indent=2)
        )
    if args.smoke:
        return
    mitm = "plain mitmdump, pass-through, interleaved rounds"
    rows = [row(f"{name} ms/request", value, "ms", better="lower") for name, value in figures.items()]
    rows.append(row("simroute / mitmdump", ratio, "ratio", baseline=mitm, target="<= 1.2", better="lower"))
    if "simroute-auth" in figures:
        rows.append(
            row(
                "simroute-auth / mitmdump",
                figures["simroute-auth"] / figures["mitmdump"],
                "ratio",
                baseline=mitm,
                target="<= 1.2",
                better="lower",
            )
        )
    write_results(__file__, "Per-request cost of the HTTP channel against plain mitmdump", rows)


if __name__ == "__main__":
    main()
