"""The demo: simroute launched as a user launches it, in front of a real MCP
server (mcp-server-time), over stdio: real, replayed, simulated and shadowed
calls, shell commands in a Docker sandbox and on a simulated terminal, the
divergences the shadowed calls measured, and (router/cli/demo_http.py) an agent's
web API calls through `simroute http-proxy`. Every simulated answer is shown with its
sub-provenance (`_meta.simroute.source`): the simulated `cat` and `ls` of the file the
session wrote come from the session's world state, with no model call."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from router.cli.demo_http import HTTP_RULES, http_sessions_ok, print_http_rows, run_http_sessions, sub_line

DEMO_CONFIG = """\
# simroute demo: the reference time server, routed per call.
mode: real
mcpServers:
  time:
    command: {python}
    args: ["-m", "mcp_server_time", "--local-timezone", "UTC"]
  weather:                        # a virtual server: declared here, answered by the world model
    type: virtual
    initial_state: |
      A fictional world. It is 2031-04-02. Lima: 24 C and sunny. Oslo: 3 C and snowing.
    tools:
      - name: get_forecast
        description: Today's forecast for a city.
        inputSchema:
          type: object
          properties: {{city: {{type: string}}}}
          required: [city]
        outputSchema:
          type: object
          properties:
            city: {{type: string}}
            temp_c: {{type: number}}
            sky: {{type: string, enum: [sunny, cloudy, rain, snow]}}  # a free string lets a small model ramble
          required: [city, temp_c, sky]
        annotations: {{readOnlyHint: true}}
perturbations:                    # seeded faults: the same calls fail on every run
  apply: demo
  plans:
    demo:
      seed: 7
      rules:
        - name: oslo-clock-down
          kind: error
          match: {{tool: get_current_time, arguments: {{timezone: "Europe/Oslo"}}}}
rules:
  - name: simulate-americas
    match: {{tool: get_current_time, arguments: {{timezone: "America/*"}}}}
    route: sim
  - name: replay-clock
    match: {{tool: get_current_time}}
    route: replay
  - name: shadow-conversions
    match: {{tool: convert_time}}
    route: shadow
{shell_rules}{http_rules}shell:
  pool_size: 1
http:
  ca_dir: ca              # the HTTPS CA of this demo (simroute ca: the user's own)
replay:
  on_miss: real
world_model:            # the bundled SmolLM2-135M GGUF, in-process
  max_tokens: 256
  deadline_s: 120       # a slow first run on a busy laptop is not a failure of the demo
store:
  path: records.db
"""

# Session 2 also simulates read-only shell commands (`cat`, `ls`): the session's world
# state answers them from what its real `echo … > notes.txt` wrote (sub-provenance
# `state`, no model call); a line the state cannot answer would go to the world model.
SIMULATE_READS = """\
  - name: simulate-reads          # read-only shell commands go to the simulated terminal
    match: {channel: shell, arguments: {command: "re:^(cat |ls$)"}}
    route: sim
"""

# Two MCP servers behind simroute: their tools are listed as `server_tool`.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("time_get_current_time", {"timezone": "Asia/Tokyo"}),
    ("time_get_current_time", {"timezone": "Europe/Paris"}),
    ("time_get_current_time", {"timezone": "Asia/Tokyo"}),
    ("time_get_current_time", {"timezone": "America/Lima"}),
    ("weather_get_forecast", {"city": "Lima"}),  # the virtual server
    ("shell_exec", {"command": "echo 'hello from the sandbox' > notes.txt && ls -l"}),
    ("shell_exec", {"command": "cat notes.txt"}),
    ("shell_exec", {"command": "ls"}),
    # Shadowed last: its simulation runs after the agent has its answer, and what
    # is still running when the session closes is finished by `simroute drain`.
    ("time_convert_time", {"source_timezone": "Europe/Paris", "time": "09:30", "target_timezone": "America/New_York"}),
    ("time_get_current_time", {"timezone": "Europe/Oslo"}),  # perturbed: the plan's seeded error
]


async def read_records(path: Path) -> list[dict]:
    from records.store.sqlite.store import SQLiteStore

    store = await SQLiteStore(path, read_only=True).open()
    try:
        return await store.recent()
    finally:
        await store.aclose()


def simroute_command() -> list[str]:
    return [sys.executable, "-m", "router.cli.main"]


async def run_agent_session(config_path: Path, label: str) -> list[dict[str, Any]]:
    command = simroute_command()
    transport = StdioTransport(
        command=command[0], args=[*command[1:], "mcp", "--config", str(config_path)], keep_alive=False
    )
    rows = []
    async with Client(transport) as client:
        tools = await client.list_tools()
        print(f"\n[{label}] tools through simroute: {', '.join(t.name for t in tools)}")
        for tool, arguments in CALLS:
            result = await client.call_tool(tool, arguments, raise_on_error=False)
            meta = (result.meta or {}).get("simroute", {})
            answer = result.structured_content or {"text": (result.content[0].text if result.content else "")}
            rows.append({"tool": tool, "arguments": arguments, "answer": answer, **meta})
    return rows


def print_rows(rows: list[dict[str, Any]], latency_by_record: dict[str, float]) -> None:
    print(f"{'tool':22} {'arguments':28} {'route':7} {'provenance':10} {'latency':>10}  {'policy':22} answer")
    for row in rows:
        args = ",".join(str(v) for v in row["arguments"].values())[:28]
        answer = json.dumps(row["answer"], ensure_ascii=False)[:60]
        latency = latency_by_record.get(row.get("record_id", ""), float("nan"))
        print(
            f"{row['tool']:22} {args:28} {row['route']:7} {row['provenance']:10} {latency:8.2f}ms  "
            f"{row['policy']:22} {answer}"
        )
        if row["provenance"] == "sim":
            print(sub_line(row.get("source")))
        if row.get("note"):
            print(f"{'':22} note: {row['note']}")
        if row.get("perturbation"):
            p = row["perturbation"]
            print(f"{'':22} perturbed: {p['kind']} by rule {p['rule']} (seed {p['seed']}, matching call {p['n']})")


async def run_demo(workdir: Path) -> int:
    workdir.mkdir(parents=True, exist_ok=True)
    config_path, rehearsal_path = workdir / "simroute.yaml", workdir / "simroute-reads-simulated.yaml"
    for path, shell_rules in ((config_path, ""), (rehearsal_path, SIMULATE_READS)):
        path.write_text(
            DEMO_CONFIG.format(python=json.dumps(sys.executable), http_rules=HTTP_RULES, shell_rules=shell_rules)
        )
    (workdir / "records.db").unlink(missing_ok=True)
    print(f"simroute demo — config {config_path}")

    first = await run_agent_session(config_path, "session 1: records real observations")
    second = await run_agent_session(rehearsal_path, "session 2: replays session 1, simulates reads")
    web_first, web_second = await asyncio.to_thread(run_http_sessions, simroute_command(), config_path)
    # Shadow work still in flight when a session closed stays pending; drain completes it.
    drain = subprocess.run([*simroute_command(), "drain", "--config", str(config_path)], capture_output=True, text=True)
    print(f"\n{drain.stdout.strip()}")

    records = await read_records(workdir / "records.db")
    latencies = {r["id"]: r["latency_ms"] for r in records}
    print("\n== session 1 ==")
    print_rows(first, latencies)
    print("\n== session 2 ==")
    print_rows(second, latencies)
    by_id = {r["id"]: r for r in records}
    print_http_rows("HTTP session 1 (through simroute http-proxy): records real answers", web_first, by_id)
    print_http_rows("HTTP session 2: replays session 1", web_second, by_id)
    shadowed = [r for r in records if r["route"] == "shadow"]
    print("\n== shadowed calls: real served, simulated off the agent's path ==")
    for record in shadowed:
        shown = json.dumps(
            (record["shadow"] or {}).get("structured") or (record["shadow"] or {}).get("content"), ensure_ascii=False
        )[:70]
        kind = record.get("divergence_kind") or "-"
        # How the simulated side was made.
        sub = ((record["shadow"] or {}).get("source") or {}).get("sub") or "none named"
        print(
            f"{record['tool']:14} status {record['status']:8} divergence {record['divergence']!s:6} {kind:9}  "
            f"simulated ({sub}): {shown}"
        )
    print(f"\n{len(records)} records in {workdir / 'records.db'}  (simroute records --config {config_path})")

    replayed = [r for r in second if r["provenance"] == "replay"]
    same = all(a["answer"] == b["answer"] for a, b in zip(first, second, strict=False) if b["provenance"] == "replay")
    simulated = [r for r in first + second if r["route"] == "sim"]
    shell_real_ok = all(
        r["provenance"] == "real" for r in first + second if r["tool"] == "shell_exec" and r["route"] != "sim"
    )
    simulated_ok = (
        shell_real_ok
        and len(simulated) == 6
        and all(r["provenance"] == "sim" and "world model failed" not in json.dumps(r["answer"]) for r in simulated)
    )
    shadow_ok = len(shadowed) == 2 and all(r["status"] == "complete" and r["divergence"] is not None for r in shadowed)
    perturbed = [r for r in first + second if r.get("perturbation")]
    perturbed_ok = len(perturbed) == 2 and all(
        r["provenance"] == "none" and r["perturbation"]["kind"] == "error" for r in perturbed
    )
    ok = (
        len(replayed) == 3
        and same
        and simulated_ok
        and perturbed_ok
        and shadow_ok
        and http_sessions_ok(web_first, web_second)
    )
    print("demo:", "ok" if ok else "UNEXPECTED ROUTES")
    return 0 if ok else 1
