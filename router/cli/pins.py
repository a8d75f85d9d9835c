"""`simroute pins`: the tool-definition pins (router/engine/tool_pin_checks.py) and the changes
upstreams made to pinned tools; `simroute pins accept SERVER [TOOL]` accepts a change,
which every router then lists and calls as the tool's definition."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Annotated, Any

import typer

from router.cli.common import ConfigOption, load_or_exit, read_store

pins_app = typer.Typer(
    help=(
        "Tool-definition pins: list them and the changes upstreams "
        "made (simroute pins), accept a change (simroute pins accept)."
    ),
    invoke_without_command=True,
)


@pins_app.callback()
def pins(
    ctx: typer.Context,
    config: ConfigOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object: {pins, changes}.")] = False,
) -> None:
    """List each upstream tool's pinned definition and the changes later listings showed
    (pending ones with their diff)."""
    if ctx.invoked_subcommand is not None:
        return
    cfg = load_or_exit(config)

    async def both(store: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return await store.pins(), await store.pin_changes()

    pinned, changes = read_store(cfg, both)
    if as_json:
        typer.echo(json.dumps({"policy": cfg.pins.policy, "pins": pinned, "changes": changes}, ensure_ascii=False))
        return
    pending = {(c["server"], c["tool"]) for c in changes if c["status"] == "pending"}
    typer.echo(f"{len(pinned)} pinned tool(s), {len(pending)} with a pending change (pins.policy {cfg.pins.policy})")
    for pin in pinned:
        mark = "  CHANGED, not accepted" if (pin["server"], pin["tool"]) in pending else ""
        typer.echo(f"  {pin['server']}.{pin['tool']:<28} {pin['digest'][:12]}  pinned {_when(pin['ts'])}{mark}")
    for change in changes:
        typer.echo(
            f"\n{change['status']:<10} {change['server']}.{change['tool']}  {', '.join(change['fields'])}  "
            f"{change['old_digest'][:12]} -> {change['new_digest'][:12]}  seen {_when(change['ts'])}"
        )
        if change["status"] == "pending":
            typer.echo(change["diff"])
            typer.echo(f"accept with: simroute pins accept {change['server']} {change['tool']}")


@pins_app.command()
def accept(
    server: Annotated[str, typer.Argument(help="The upstream server (its name in the config).")],
    tool: Annotated[
        str | None, typer.Argument(help="One tool of it (default: every pending change of the server).")
    ] = None,
    config: ConfigOption = None,
) -> None:
    """Accept the pending change(s) of SERVER (or of its TOOL): the new definition becomes
    the pin, the agent is listed it, and a quarantine or block on it ends."""
    from records.store.protocol import StoreError

    cfg = load_or_exit(config)
    if not cfg.store_location.exists():
        typer.echo(f"simroute: no records yet ({cfg.store_path} does not exist)", err=True)
        raise typer.Exit(1)

    async def run() -> list[dict[str, Any]]:
        store = await cfg.open_store().open()
        try:
            return await store.end_pin_changes(server, [tool] if tool is not None else None, "accepted")
        finally:
            await store.aclose()

    try:
        accepted = asyncio.run(run())
    except StoreError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    if not accepted:
        typer.echo(f"simroute: no pending change of {server!r}{f' tool {tool!r}' if tool else ''} to accept", err=True)
        raise typer.Exit(1)
    for change in accepted:
        typer.echo(
            f"accepted {change['server']}.{change['tool']} {change['new_digest'][:12]} ({', '.join(change['fields'])})"
        )


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
