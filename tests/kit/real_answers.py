"""Real answers of the project's own test and benchmark servers, as record rows (the
shape the world model's grounding reads), in session order: a corpus for checking
that what simroute holds against simulated answers never refuses real ones.

- MCP: the test servers (toolbox, notes store, catalog) and the benchmark servers
  (ticket counter, git-style repository server) in process, and the PyPI
  `mcp-server-time` over stdio;
- HTTP: the test upstream (tests/servers/http_upstream.py) and the benchmarks' items
  API, over loopback;
- shell: ordinary commands run by bash in a scratch folder (GNU coreutils).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2 as httpx
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from backends.http.messages import encode_body, observation_of, response_record
from backends.shell.screen import ShellResult
from calls import Observation, Provenance

ROOT = Path(__file__).resolve().parents[2]
Row = dict[str, Any]


def row(channel: str, server: str, tool: str, arguments: dict, observation: Observation, session: str) -> Row:
    return {
        "session": session,
        "channel": channel,
        "server": server,
        "tool": tool,
        "arguments": arguments,
        "observation": observation.to_json(),
    }


def _module(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _observation(result: Any) -> Observation:
    return Observation(
        content=[block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content],
        structured=result.structured_content,
        is_error=bool(result.is_error),
        provenance=Provenance.REAL,
    )


async def _calls(client: Client, server: str, calls: list[tuple[str, dict]], session: str) -> list[Row]:
    rows = []
    for tool, arguments in calls:
        result = await client.call_tool(tool, arguments, raise_on_error=False)
        rows.append(row("mcp", server, tool, arguments, _observation(result), session))
    return rows


async def mcp_answers(scratch: Path) -> list[Row]:
    """Two sessions of calls per server, with varied arguments."""
    os.environ.setdefault("TOOLBOX_TICKETS", str(scratch / "toolbox-tickets"))
    os.environ.setdefault("TOOLBOX_BALANCE", str(scratch / "toolbox-balance"))
    os.environ.setdefault("TICKET_COUNTER_STATE", str(scratch / "tickets.json"))
    toolbox = _module(ROOT / "tests/servers/toolbox.py", "real_answers_toolbox")
    notes = _module(ROOT / "tests/servers/notes_store.py", "real_answers_notes")
    catalog = _module(ROOT / "tests/servers/catalog.py", "real_answers_catalog")
    tickets = _module(ROOT / "benchmarks/servers/ticket_counter.py", "real_answers_tickets")
    repo = _module(ROOT / "benchmarks/servers/repo_server.py", "real_answers_repo")
    repositories = []
    for index, files in enumerate(({"README.md": "# A\n", "main.py": "print(1)\n"}, {"notes.txt": "buy milk\n"}, {})):
        folder = scratch / f"repo{index}"
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
        repositories.append(str(folder))
    repo.ROOTS = [scratch.resolve()]
    for index in range(3):
        (scratch / f"note-{index}.txt").write_text("x")

    rows: list[Row] = []
    for session in ("a", "b"):
        words = ["hello", "buy milk and eggs", "Lima"] if session == "a" else ["good morning", "x:1 and y:2", "Paris"]
        async with Client(toolbox.mcp) as client:
            calls = [("echo", {"text": word}) for word in words]
            calls += [
                ("sleep", {"seconds": 0.01}),
                ("count_up", {"n": 3}),
                ("get_motto", {}),
                ("get_visits", {}),
                ("get_visits", {}),
            ]
            calls += [
                ("next_ticket", {}),
                ("add_funds", {"amount": 5}),
                ("get_balance", {}),
                ("announce_tools_changed", {}),
            ]
            calls += [
                ("tidy_note", {"path": str(scratch / f"note-{0 if session == 'a' else 1}.txt")}),
                ("fail", {"message": f"bad {session}"}),
            ]
            rows += await _calls(client, "toolbox", calls, f"toolbox-{session}")
        async with Client(notes.mcp) as client:
            titles = ["groceries", "ideas"] if session == "a" else ["travel plans", "books to read"]
            calls = [("version", {}), ("list_notes", {})]
            calls += [("create_note", {"title": title, "body": f"about {title}"}) for title in titles]
            calls += [
                ("list_notes", {}),
                ("get_note", {"note_id": 1}),
                ("delete_note", {"note_id": 1}),
                ("get_note", {"note_id": 1}),
            ]
            rows += await _calls(client, "notes", calls, f"notes-{session}")
        async with Client(catalog.mcp) as client:
            products = ["desk lamp", "wall lamp"] if session == "a" else ["floor lamp", "night lamp"]
            calls = [("list_products", {"category": "lamps"}), ("list_products", {"category": "chairs"})]
            calls += [("get_price", {"product": product}) for product in products]
            rows += await _calls(client, "catalog", calls, f"catalog-{session}")
        async with Client(tickets.mcp) as client:
            calls = [
                ("server_version", {}),
                ("current_ticket", {}),
                ("next_ticket", {}),
                ("next_ticket", {}),
                ("current_ticket", {}),
            ]
            rows += await _calls(client, "tickets", calls, f"tickets-{session}")
        async with Client(repo.mcp) as client:
            calls = []
            for path in repositories if session == "a" else list(reversed(repositories)):
                calls += [
                    ("workspace_info", {"path": path}),
                    ("summary", {"path": path}),
                    ("list_files", {"path": path}),
                ]
            calls += [
                ("read_file", {"path": repositories[0], "name": "README.md"}),
                ("read_file", {"path": repositories[1], "name": "notes.txt"}),
            ]
            calls += [("workspace_info", {"path": "/nowhere"})]
            rows += await _calls(client, "repo", calls, f"repo-{session}")
        transport = StdioTransport(sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"])
        async with Client(transport) as client:
            zones = (
                ["Europe/Paris", "Asia/Tokyo", "America/Lima"]
                if session == "a"
                else ["America/New_York", "Africa/Cairo", "UTC"]
            )
            calls = [("get_current_time", {"timezone": zone}) for zone in zones]
            calls += [
                ("convert_time", {"source_timezone": zones[0], "time": "16:30", "target_timezone": zones[1]}),
                ("convert_time", {"source_timezone": zones[2], "time": "09:05", "target_timezone": zones[0]}),
                ("get_current_time", {"timezone": "Mars/Olympus"}),
            ]
            rows += await _calls(client, "time", calls, f"time-{session}")
    return rows


@contextmanager
def _items_api() -> Iterator[str]:
    items = _module(ROOT / "benchmarks/_items_api.py", "real_answers_items")
    server = ThreadingHTTPServer(("127.0.0.1", 0), items.ItemsApi)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="items-api", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def http_answers() -> list[Row]:
    from servers.http_upstream import serve_upstream

    requests = {
        "upstream": [
            ("GET", "/json", None),
            ("GET", "/echo/a", None),
            ("POST", "/echo/b", "hi"),
            ("GET", "/gzip", None),
        ]
        + [
            ("GET", "/status?code=204", None),
            ("GET", "/big?n=300", None),
            ("GET", "/chunked?n=3", None),
            ("GET", "/nope", None),
        ]
        + [("GET", "/echo/c?x=1", None), ("DELETE", "/echo/d", None)],
        "items": [
            ("GET", "/items", None),
            ("POST", "/items", '{"name": "lamp"}'),
            ("POST", "/items", '{"name": "desk"}'),
        ]
        + [("GET", "/items/1", None), ("GET", "/items/2", None), ("GET", "/items", None), ("DELETE", "/items/1", None)]
        + [("GET", "/items/1", None), ("GET", "/items/9", None)],
    }
    rows: list[Row] = []
    with serve_upstream() as upstream, _items_api() as items, httpx.Client(trust_env=False) as client:
        for name, base in (("upstream", upstream), ("items", items)):
            host = base.split("://", 1)[1]
            for method, path, body in requests[name]:
                response = client.request(method, base + path, content=body)
                record = response_record(
                    response.status_code,
                    response.reason_phrase,
                    list(response.headers.multi_items()),
                    encode_body(response.content, limit=64_000),
                    decoded=True,
                )
                arguments = {"method": method, "path": path, **({"body": body} if body else {})}
                rows.append(
                    row("http", host, method, arguments, observation_of(record, Provenance.REAL), f"http-{name}")
                )
    return rows


SHELL_COMMANDS = [
    "pwd",
    "echo hello",
    "echo gamma > new.txt",
    "cat new.txt",
    "printf 'alpha\\nbeta\\ngamma\\n' > notes.txt",
    "cat notes.txt",
    "wc -l notes.txt",
    "head -n 2 notes.txt",
    "tail -n 1 notes.txt",
    "grep beta notes.txt",
    "grep -c a notes.txt",
    "grep zeta notes.txt",
    "ls",
    "ls -a",
    "mkdir -p src/pkg && touch src/pkg/__init__.py",
    "find . -name '*.py'",
    "cp notes.txt copy.txt && ls",
    "mv copy.txt moved.txt && ls",
    "rm moved.txt",
    "cat moved.txt",
    "ls missing",
    "test -f notes.txt && echo yes",
    "[ -d src ] && echo dir",
    "true",
    "false",
    "export GREETING=hi && echo $GREETING",
    "cd src && pwd",
    "seq 1 12",
    "echo one; echo two",
    "cat notes.txt | sort -r",
    "echo ':1:2:3'",
    "printf '%s\\n' a b c | wc -l",
    "ls -l notes.txt | cut -c1-10",
    "python3 -c 'print(1 + 1)'",
    "git --version | cut -d' ' -f1-2",
    "nosuchcommand",
]


def shell_answers(scratch: Path) -> list[Row]:
    """One session: each command run by bash in the same scratch folder, in order."""
    folder = scratch / "shell"
    folder.mkdir()
    rows = []
    for command in SHELL_COMMANDS:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=20,
            env={**os.environ, "LC_ALL": "C"},
        )
        result = ShellResult(done.stdout + done.stderr, done.returncode, "/workspace")
        observation = Observation(
            [{"type": "text", "text": result.text()}], Provenance.REAL, structured=result.structured()
        )
        rows.append(row("shell", "shell", "shell_exec", {"command": command}, observation, "shell"))
    return rows


def to_json(rows: list[Row]) -> str:
    return json.dumps(rows, indent=1)
