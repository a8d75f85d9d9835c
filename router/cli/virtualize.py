"""`simroute virtualize SERVER`: the config with SERVER turned into a virtual server.

Its tools come from the live server's `tools/list` (or, when it cannot be reached or
with `--from-snapshot`, from the store's snapshot of its last listing); `--recording`
backs it by a named recording of it, whose calls are then replayed in order. The rest
of the config is kept as it is (comments are not), so the same store, world model and
rules serve the virtual server."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from router.cli.common import ConfigOption, load_or_exit
from router.config import Config

# What a declaration keeps of a listed tool (icons, _meta and execution hints describe the real server).
_TOOL_KEYS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")


def virtualize(
    server: Annotated[str, typer.Argument(help="The configured MCP server to virtualize.")],
    config: ConfigOption = None,
    recording: Annotated[
        str | None,
        typer.Option(help="Back it by this named recording (`simroute recordings`): its calls replay in order."),
    ] = None,
    initial_state: Annotated[
        str | None, typer.Option(help="What the simulated server holds at the start of a session.")
    ] = None,
    from_snapshot: Annotated[
        bool, typer.Option("--from-snapshot", help="Take its tools from the store's last listing, without starting it.")
    ] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the config here (default: stdout).")
    ] = None,
) -> None:
    """Write the config with SERVER declared virtual: its tools as listed, answered by its
    recording or the world model.
    """
    from backends.mcp.virtual import VirtualServer

    cfg = load_or_exit(config)
    spec = cfg.upstreams.get(server)
    if spec is None:
        raise _fail(
            f"no MCP server named {server!r} in {cfg.source} (servers: {', '.join(sorted(cfg.upstreams)) or 'none'})", 2
        )
    if isinstance(spec, VirtualServer):
        raise _fail(f"{server!r} is already a virtual server", 2)
    tools, where = asyncio.run(_tools(cfg, server, from_snapshot=from_snapshot))
    if recording is not None:
        asyncio.run(_check_recording(cfg, server, recording))
    declaration: dict[str, Any] = {
        "type": "virtual",
        "tools": [{k: t[k] for k in _TOOL_KEYS if t.get(k) is not None} for t in tools],
    }
    for key, value in (("recording", recording), ("initial_state", initial_state), ("sim_timeout", spec.sim_timeout)):
        if value is not None:
            declaration[key] = value
    VirtualServer.model_validate(declaration)  # what is written serves: a listing simroute would refuse fails here
    text = yaml.safe_dump(_with_virtual(cfg, server, declaration), sort_keys=False, allow_unicode=True, width=120)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
    typer.echo(
        f"simroute: {server!r} virtualized: {len(tools)} tool(s) from {where}"
        + (f", backed by recording {recording!r}" if recording else ""),
        err=True,
    )


async def _tools(cfg: Config, server: str, *, from_snapshot: bool) -> tuple[list[dict[str, Any]], str]:
    """(tool definitions, where they came from): the live listing, else the store's snapshot."""
    problem = "--from-snapshot"
    if not from_snapshot:
        try:
            return await _live_tools(cfg, server), "its live tools/list"
        except Exception as exc:  # noqa: BLE001 -- the live listing's boundary: any failure falls back to the snapshot, and is said
            problem = f"{type(exc).__name__}: {exc}"
            typer.echo(f"simroute: could not list {server!r} live ({problem}); using the store's snapshot", err=True)
    snapshot = await _read(cfg, lambda store: store.tool_snapshot(server))
    if not snapshot:
        raise _fail(f"no tools for {server!r}: not listed live ({problem}) and the store has no snapshot of it", 1)
    return snapshot, "the store's snapshot"


async def _live_tools(cfg: Config, server: str) -> list[dict[str, Any]]:
    from fastmcp import Client

    from backends.mcp.upstream import make_transport

    async with asyncio.timeout(cfg.list_timeout_s), Client(make_transport(cfg.real_upstreams[server])) as client:
        listed = await client.list_tools()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed]


async def _check_recording(cfg: Config, server: str, recording: str) -> None:
    names = [info.name for info in await _read(cfg, lambda store: store.recordings())]
    if recording not in names:
        raise _fail(
            f"no recording named {recording!r} (recordings: {', '.join(names) or 'none'}; see `simroute recordings`)", 1
        )
    rows = await _read(cfg, lambda store: store.recent(limit=1, recording=recording, server=server))
    if not rows:
        raise _fail(f"recording {recording!r} holds no call of {server!r}", 1)


async def _read(cfg: Config, query) -> Any:
    from records.store.protocol import StoreError

    if not cfg.store_location.exists():
        raise _fail(f"no records yet ({cfg.store_path} does not exist)", 1)
    try:
        store = await cfg.open_store(read_only=True).open()
    except StoreError as exc:
        raise _fail(str(exc), 1) from exc
    try:
        found = query(store)
        return await found if asyncio.iscoroutine(found) else found
    finally:
        await store.aclose()


def _with_virtual(cfg: Config, server: str, declaration: dict[str, Any]) -> dict[str, Any]:
    """The config file's document with `server`'s entry replaced. A `replay.recording`
    is left out: sessions served by the virtual server must not join a recording."""
    data: dict[str, Any] = {}
    if cfg.source not in ("<defaults>", "<config>"):
        data = yaml.safe_load(Path(cfg.source).read_text(encoding="utf-8")) or {}
    table = "servers" if server in (data.get("servers") or {}) else "mcpServers"
    data[table] = {**(data.get(table) or {}), server: declaration}
    replay = data.get("replay")
    if isinstance(replay, dict) and replay.pop("recording", None) is not None:
        typer.echo(
            "simroute: replay.recording left out: sessions of the virtual server are not recorded into it", err=True
        )
    return data


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"simroute: {message}", err=True)
    return typer.Exit(code)
