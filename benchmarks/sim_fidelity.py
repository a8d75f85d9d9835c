"""Simulation fidelity on a mixed workload of the project's own, with the bundled
world model: how far simulated observations are from real ones, how often they
are well-formed for their channel, and how long they take.

Workload (each call once, in order, one agent session per channel):
  MCP    mcp-server-time (structured) and the stateful notes store of the tests
         (text tools: create/list/get/delete, a constant `version`, an error)
  shell  an episode in the Docker sandbox: make a folder, write files, list, grep, count
  HTTP   calls to a local JSON API (a small stateful items store) through the proxy

Phases: (1) real, recorded; (2) from a fresh state, real again, into a separate
store (the answers to compare with); (3) from a fresh state, simulated with the
phase-1 records as the only examples — once per checkout under test (e.g. the
code before a change as the baseline, then the current code), one after the other
in the same run. Per call and per channel: divergence (shadow.compare.divergence) between
phase 2 and phase 3, the well-formed rate (backends/world_model/checks.py) and
the latency of the simulated call.

With --smoke: two calls per channel, the same three phases.

Usage: python benchmarks/sim_fidelity.py [--baseline /path/to/other/checkout] [--smoke]
Needs the Docker image simroute-sandbox:latest (scripts/build-images.sh) and the
bundled model (scripts/setup.sh). Run it alone: model timings follow CPU load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from _items_api import ItemsApi  # noqa: E402
from _results import add_smoke_flag, row, write_results  # noqa: E402

from backends.world_model.checks import check  # noqa: E402
from calls import Observation  # noqa: E402
from shadow.compare.divergence import divergence  # noqa: E402

NOTES = ROOT / "tests" / "servers" / "notes_store.py"
MCP_CALLS = [
    ("time", "get_current_time", {"timezone": "Asia/Tokyo"}),
    ("time", "get_current_time", {"timezone": "Europe/Paris"}),
    ("time", "convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    ("notes", "version", {}),
    ("notes", "list_notes", {}),
    ("notes", "create_note", {"title": "groceries", "body": "milk, eggs"}),
    ("notes", "create_note", {"title": "ideas", "body": "a faster router"}),
    ("notes", "list_notes", {}),
    ("notes", "get_note", {"note_id": 1}),
    ("notes", "get_note", {"note_id": 9}),
    ("notes", "delete_note", {"note_id": 1}),
    ("notes", "list_notes", {}),
]
SHELL_CALLS = [
    "mkdir -p proj && cd proj && pwd",
    "printf 'alpha\\nbeta\\ntodo: ship\\n' > a.txt && printf 'todo: test\\n' > b.txt",
    "ls",
    "grep -c todo a.txt b.txt",
    "wc -l a.txt",
    "cat a.txt",
    "ls | wc -l",
]
HTTP_CALLS = [
    ("GET", "/items", None),
    ("POST", "/items", {"name": "bolt"}),
    ("POST", "/items", {"name": "nut"}),
    ("GET", "/items", None),
    ("GET", "/items/1", None),
    ("GET", "/items/9", None),
    ("DELETE", "/items/1", None),
    ("GET", "/items", None),
]


def smoke_workload() -> None:
    """Cuts the workload to two calls per channel (a structured and a text MCP tool,
    a shell write and read, an HTTP read and write): the same phases and code paths."""
    MCP_CALLS[:] = [MCP_CALLS[0], MCP_CALLS[3]]
    SHELL_CALLS[:] = SHELL_CALLS[:2]
    HTTP_CALLS[:] = HTTP_CALLS[:2]


def summary_rows(tables: dict[str, dict[str, tuple[float, float, float, float]]], baseline: str | None) -> list[dict]:
    """The summary table as results rows: per run (`tables`' keys) and channel; then the
    ratios of the second run to the first, against `baseline` (what the first run is)."""
    rows = []
    for name, table in tables.items():
        for channel, (div, well_formed, median_s, mean_s) in table.items():
            rows.append(row(f"{name} {channel}: mean divergence", div, "divergence", better="lower"))
            rows.append(row(f"{name} {channel}: well-formed", well_formed, "fraction", better="higher"))
            rows.append(row(f"{name} {channel}: median latency", median_s, "s", better="lower"))
            rows.append(row(f"{name} {channel}: mean latency", mean_s, "s", better="lower"))
    if len(tables) > 1 and baseline is not None:
        (first, b), (second, c) = list(tables.items())[:2]
        for channel in c:
            if b[channel][0]:
                rows.append(
                    row(
                        f"{second} / {first} {channel}: mean divergence",
                        c[channel][0] / b[channel][0],
                        "ratio",
                        baseline=baseline,
                        better="lower",
                    )
                )
            rows.append(
                row(
                    f"{second} / {first} {channel}: median latency",
                    c[channel][2] / b[channel][2],
                    "ratio",
                    baseline=baseline,
                    better="lower",
                )
            )
    return rows


def write_config(folder: Path, store: Path, mode: str, world_model: dict | None = None) -> Path:
    """A config for one phase; `world_model` adds settings (another model file, a chat format)."""
    config = {
        "store": {"path": str(store)},
        "mode": mode,
        "mcpServers": {
            "time": {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]},
            "notes": {"command": sys.executable, "args": [str(NOTES)]},
        },
        "shell": {"enabled": True, "pool_size": 0},
        "browser": {"enabled": False},
        "http": {"ca_dir": str(folder / "ca")},
        "world_model": {"deadline_s": 180, **(world_model or {})},
    }
    path = folder / f"simroute-{mode}-{store.stem}.yaml"
    path.write_text(json.dumps(config, indent=2))
    return path


def env_for(checkout: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(checkout), "PYTHONUNBUFFERED": "1"}


async def run_mcp(
    config: Path, checkout: Path, session: str, channels: set[str] = frozenset({"mcp", "shell"})
) -> list[dict]:
    """The MCP and shell calls through `simroute mcp` over stdio; wall time per call."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport
    from kit.launch import simroute_executable

    transport = StdioTransport(
        command=simroute_executable(), args=["mcp", "--config", str(config)], env=env_for(checkout), keep_alive=False
    )
    timings = []
    async with Client(transport) as client:
        names = {tool.name: tool for tool in await client.list_tools()}
        schemas = {}
        for server, tool, arguments in MCP_CALLS if "mcp" in channels else ():
            name = tool if tool in names else f"{server}_{tool}"
            schemas[name] = getattr(names[name], "output_schema", None)
            started = time.monotonic()
            await client.call_tool(name, arguments, raise_on_error=False)
            timings.append(
                {
                    "channel": "mcp",
                    "label": f"{server}.{tool} {json.dumps(arguments)[:40]}",
                    "latency_s": time.monotonic() - started,
                    "schema": schemas[name],
                }
            )
        for command in SHELL_CALLS if "shell" in channels else ():
            started = time.monotonic()
            await client.call_tool("shell_exec", {"command": command}, raise_on_error=False)
            timings.append({"channel": "shell", "label": command[:48], "latency_s": time.monotonic() - started})
    return timings


def run_http(config: Path, checkout: Path, api: str, session: str) -> list[dict]:
    import httpx2
    from kit.launch import simroute_executable

    from router.cli.launch import free_port, stop, wait_for_port

    port = free_port()
    log = config.parent / f"proxy-{port}.log"
    process = subprocess.Popen(
        [simroute_executable(), "http-proxy", "--config", str(config), "--port", str(port)],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env=env_for(checkout),
    )
    timings = []
    try:
        wait_for_port(port, process, describe=log.read_text)
        with httpx2.Client(proxy=f"http://127.0.0.1:{port}", timeout=300) as client:
            for method, path, body in HTTP_CALLS:
                started = time.monotonic()
                client.request(method, api + path, json=body, headers={"X-Simroute-Session": session})
                timings.append(
                    {"channel": "http", "label": f"{method} {path}", "latency_s": time.monotonic() - started}
                )
    finally:
        stop(process)
    return timings


def observations(config: Path) -> dict[str, list[Observation]]:
    from kit.launch import records_of

    out: dict[str, list[Observation]] = {}
    for record in records_of(config):
        out.setdefault(record["channel"], []).append(Observation.from_json(record["observation"]))
    return out


def phase(config: Path, checkout: Path, api: str, channels: set[str]) -> list[dict]:
    """One run of the workload from a fresh state: new upstream processes, a new
    sandbox, an empty API; its own agent sessions (examples come from other sessions)."""
    ItemsApi.reset()
    timings = asyncio.run(run_mcp(config, checkout, "bench", channels)) if channels & {"mcp", "shell"} else []
    if "http" in channels:
        timings += run_http(config, checkout, api, f"bench-http-{config.stem}")
    return [t for t in timings if t["channel"] in channels]


def score(
    real: dict[str, list[Observation]], simulated: dict[str, list[Observation]], timings: list[dict]
) -> list[dict]:
    rows, seen = [], {"mcp": 0, "shell": 0, "http": 0}  # records of a channel come in call order
    for timing in timings:
        channel = timing["channel"]
        index = seen[channel]
        seen[channel] += 1
        r, s = real[channel][index], simulated[channel][index]
        json_body = channel == "http" and _is_json((r.structured or {}).get("body"))
        problem = check(channel, s, schema=timing.get("schema"), json_body=json_body)
        rows.append(
            {
                **timing,
                "divergence": divergence(r, s),
                "well_formed": problem is None,
                "problem": problem,
                "sim": s.text[:60],
            }
        )
    return rows


def _is_json(body) -> bool:
    try:
        json.loads(body or "")
    except ValueError:
        return False
    return True


def summary(rows: list[dict]) -> dict[str, tuple[float, float, float, float]]:
    out = {}
    for channel in ("mcp", "shell", "http", "all"):
        part = [r for r in rows if channel in ("all", r["channel"])]
        if not part:
            continue
        out[channel] = (
            statistics.mean(r["divergence"] for r in part),
            sum(r["well_formed"] for r in part) / len(part),
            statistics.median(r["latency_s"] for r in part),
            statistics.mean(r["latency_s"] for r in part),
        )
    return out


def print_per_call(results: dict[str, list[dict]]) -> None:
    for name, rows in results.items():
        print(f"\n== {name}: per call (divergence 0 = same as real; well-formed by the channel's checker)")
        print(f"{'channel':7} {'call':50} {'div':>5} {'ok':>3} {'lat s':>6}  simulated")
        for r in rows:
            print(
                f"{r['channel']:7} {r['label'][:50]:50} {r['divergence']:5.2f} "
                f"{'yes' if r['well_formed'] else 'NO':>3} {r['latency_s']:6.1f}  {r['sim']!r}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline", type=Path, help="another checkout whose simulation is measured first, as the baseline"
    )
    parser.add_argument("--json", type=Path, help="also write every row here")
    parser.add_argument("--channels", default="mcp,shell,http", help="a subset of mcp,shell,http")
    add_smoke_flag(parser)
    args = parser.parse_args()
    if args.smoke:
        smoke_workload()
    channels = set(args.channels.split(","))
    checkouts = ([("baseline", args.baseline.resolve())] if args.baseline else []) + [("current", ROOT)]

    server = ThreadingHTTPServer(("127.0.0.1", 0), ItemsApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    api = f"http://127.0.0.1:{server.server_address[1]}"
    results = {}
    with tempfile.TemporaryDirectory(prefix="sim-fidelity-") as tmp:
        folder = Path(tmp)
        recorded = write_config(folder, folder / "recorded.db", "real")
        phase(recorded, ROOT, api, channels)
        compared = write_config(folder, folder / "compared.db", "real")
        phase(compared, ROOT, api, channels)
        real = observations(compared)
        for name, checkout in checkouts:
            store = folder / f"sim-{name}.db"
            store.write_bytes((folder / "recorded.db").read_bytes())  # the same records for each
            simulated = write_config(folder, store, "sim")
            timings = phase(simulated, checkout, api, channels)
            sim_observations = observations(simulated)
            sim_observations = {
                ch: obs[-len(real[ch]) :] for ch, obs in sim_observations.items() if ch in real
            }  # this phase's only
            results[name] = score(real, sim_observations, timings)
    server.shutdown()

    print_per_call(results)
    print(f"\n{'':9}{'channel':7} {'mean div':>9} {'well-formed':>12} {'median s':>9} {'mean s':>7}")
    tables = {name: summary(rows) for name, rows in results.items()}
    for channel in [c for c in ("mcp", "shell", "http", "all") if c in tables["current"]]:
        for name in tables:
            d, w, med, mean = tables[name][channel]
            print(f"{name:9}{channel:7} {d:9.3f} {w:11.0%} {med:9.2f} {mean:7.2f}")
        if "baseline" in tables:
            b, c = tables["baseline"][channel], tables["current"][channel]
            print(
                f"{'ratio':9}{channel:7} {c[0] / b[0] if b[0] else float('nan'):9.2f} "
                f"{'':>12} {c[2] / b[2]:9.2f} {c[3] / b[3]:7.2f}"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    if not args.smoke:
        baseline = f"the simulation of the checkout {args.baseline}, same run" if args.baseline else None
        write_results(
            __file__, "Simulation fidelity on a mixed workload (bundled world model)", summary_rows(tables, baseline)
        )


if __name__ == "__main__":
    main()
