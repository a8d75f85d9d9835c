"""The project's own workload servers (benchmarks/servers/), held apart from the
tests' fixture servers the router was tuned on, and the real world they act on: a
ticket counter whose state persists in a file, a git-style server over temporary
repositories, a fetch-style server reading a page served on loopback, and the
PyPI `mcp-server-time`. Used by benchmarks/routing_quality.py and the few-sessions
learned-router test.

    with served_page(folder) as url:
        world = World(folder / "world", url)
        config = write_config(folder, mode="real", mcpServers=world.servers())
        answers = await run_session(config, [("tickets_next_ticket", {}), ...])
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from kit.launch import ROOT, records_of, stdio_client, time_server

SERVERS = ROOT / "benchmarks" / "servers"
PAGE_NAME = "release-notes.txt"
PAGE_TEXT = (
    "Release notes, version 4.1\n"
    "- The importer reads CSV files with a byte-order mark.\n"
    "- Exports keep the column order of the source table.\n"
    "- The scheduler no longer skips a job whose start falls on a leap second.\n"
)

Calls = Sequence[tuple[str, dict[str, Any]]]  # (front tool name, arguments), in order


def ticket_counter(state: Path) -> dict:
    """The ticket counter; its state (the last number issued) lives in `state`."""
    return {
        "command": sys.executable,
        "args": [str(SERVERS / "ticket_counter.py")],
        "env": {"TICKET_COUNTER_STATE": str(state)},
    }


def repo_server(*roots: Path) -> dict:
    """The git-style server over the workspaces under `roots`."""
    return {"command": sys.executable, "args": [str(SERVERS / "repo_server.py"), *map(str, roots)]}


def page_reader() -> dict:
    return {"command": sys.executable, "args": [str(SERVERS / "page_reader.py")]}


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def served_page(folder: Path, text: str = PAGE_TEXT, *, port: int = 0) -> Iterator[str]:
    """A static text page served from a loopback http.server in a thread (on `port`, or
    a free one); yields its URL."""
    site = folder / "site"
    site.mkdir(parents=True, exist_ok=True)
    (site / PAGE_NAME).write_text(text)
    server = ThreadingHTTPServer(("127.0.0.1", port), partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{PAGE_NAME}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class World:
    """The real world the workload servers act on: the counter's state file and the
    folder of repositories (shared by every config that names `servers()`)."""

    def __init__(self, folder: Path, page_url: str) -> None:
        self.folder, self.page_url = folder, page_url
        self.repositories = folder / "repositories"
        self.repositories.mkdir(parents=True, exist_ok=True)
        self.tickets = folder / "tickets.json"

    def servers(self, *names: str) -> dict[str, dict]:
        """The `mcpServers` section (all four servers, or those named); front tool
        names are then `<server>_<tool>`."""
        every = {
            "time": time_server(),
            "tickets": ticket_counter(self.tickets),
            "repo": repo_server(self.repositories),
            "pages": page_reader(),
        }
        return {name: spec for name, spec in every.items() if not names or name in names}

    def tickets_issued(self) -> int:
        return int(json.loads(self.tickets.read_text())["current"]) if self.tickets.exists() else 0

    def repository(self, name: str, files: dict[str, str]) -> Path:
        """A new workspace with `files` (name -> text)."""
        path = self.repositories / name
        path.mkdir()
        for file, text in files.items():
            (path / file).write_text(text)
        return path


async def run_session(config: Path, calls: Calls) -> list:
    """One agent session: one `simroute mcp` process over stdio, the calls in order.
    Returns the answers (fastmcp CallToolResult), in order."""
    async with stdio_client(config) as client:
        return [await client.call_tool(name, arguments) for name, arguments in calls]


def sessions_of(config: Path) -> list[str]:
    """The agent sessions of `config`'s store, in the order of their first record
    (over stdio, one `simroute mcp` process is one session)."""
    seen: dict[str, None] = {}
    for record in records_of(config):
        seen.setdefault(record["session"], None)
    return list(seen)


def session_records(config: Path, session: str) -> list[dict]:
    """One session's records, in call order."""
    return sorted(records_of(config, "--session", session), key=lambda r: r["step"])
