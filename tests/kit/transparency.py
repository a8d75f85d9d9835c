"""The same MCP client calls made directly to a server and through simroute, and their
answers as JSON: tests/servers/everything.py, simroute launched as a user launches it,
clients held open for a whole test module."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from kit.launch import ROOT, simroute_executable
from router.cli.launch import free_port, stop, wait_for_port

EVERYTHING = ROOT / "tests" / "servers" / "everything.py"


def everything_server() -> dict:
    return {"command": sys.executable, "args": [str(EVERYTHING)]}


@contextlib.contextmanager
def remote_everything(log: Path) -> Iterator[dict]:
    """The everything server over streamable HTTP; yields its config entry (`url`)."""
    port = free_port()
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, str(EVERYTHING), "--http", str(port)], stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_for_port(port, process, describe=log.read_text)
        yield {"url": f"http://127.0.0.1:{port}/mcp"}
    finally:
        stop(process)


@contextlib.contextmanager
def simroute_http(config: Path, log: Path) -> Iterator[str]:
    """`simroute mcp --http` on a free loopback port; yields its MCP URL."""
    port = free_port()
    process = subprocess.Popen(
        [simroute_executable(), "mcp", "--config", str(config), "--http", f"127.0.0.1:{port}"],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_for_port(port, process, describe=log.read_text)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


def wire(value: Any) -> Any:
    """A result as JSON on the wire, without simroute's `_meta.simroute` (an empty `_meta` dropped)."""
    dumped = value.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(value, "model_dump") else value
    if isinstance(dumped, dict) and isinstance(dumped.get("_meta"), dict):
        meta = {key: item for key, item in dumped["_meta"].items() if key != "simroute"}
        dumped = {key: item for key, item in dumped.items() if key != "_meta"} | ({"_meta": meta} if meta else {})
    return dumped


@dataclass
class Side:
    """One connected client (direct or through simroute) and the notifications it got."""

    client: Client
    notes: list[dict] = field(default_factory=list)

    @property
    def session(self) -> Any:
        return self.client.session

    def seen(self, method: str) -> list[dict]:
        return [note.get("params", {}) for note in self.notes if note.get("method") == method]

    async def settle(self, method: str, count: int, timeout_s: float = 10.0) -> list[dict]:
        """The notifications of `method` once `count` have arrived (or the deadline passed)."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while len(self.seen(method)) < count and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        return self.seen(method)

    async def pages(self, kind: str) -> list[dict]:
        """Every page of a listing, as JSON, following `nextCursor`."""
        lister: Callable[..., Awaitable[Any]] = {
            "tools": self.session.list_tools,
            "resources": self.session.list_resources,
            "resourceTemplates": self.session.list_resource_templates,
            "prompts": self.session.list_prompts,
        }[kind]
        pages, cursor = [], None
        while True:
            page = await lister(params=mcp_types.PaginatedRequestParams(cursor=cursor))
            pages.append(wire(page))
            cursor = page.next_cursor
            if cursor is None or len(pages) > 20:
                return pages


@contextlib.asynccontextmanager
async def connected(make: Callable[..., Client]) -> AsyncIterator[Side]:
    """The client `make(message_handler=…)` builds, connected for a whole test module. Its
    session's tasks live in a task of their own: a module's fixture is set up and torn
    down in different tasks."""
    notes: list[dict] = []

    async def note(message: Any) -> None:
        if hasattr(message, "model_dump"):
            notes.append(message.model_dump(mode="json", by_alias=True, exclude_none=True))

    client = make(message_handler=note)
    side = Side(client, notes)
    entered: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done = asyncio.Event()

    async def hold() -> None:
        try:
            async with client:
                entered.set_result(None)
                await done.wait()
        except BaseException as exc:
            if not entered.done():
                entered.set_exception(exc)
            raise

    task = asyncio.get_running_loop().create_task(hold(), name="held-mcp-client")
    try:
        await entered
        yield side
    finally:
        done.set()
        await task


def direct_client(**kwargs: Any) -> Client:
    """The everything server over stdio, in the handshake era simroute speaks."""
    return Client(
        StdioTransport(command=sys.executable, args=[str(EVERYTHING)], keep_alive=False), mode="legacy", **kwargs
    )
