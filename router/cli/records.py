"""`simroute records` and `simroute recordings`: what the store holds, printed."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from router.cli.common import ConfigOption, JsonOption, load_or_exit, print_json, read_store


def records(
    config: ConfigOption = None,
    as_json: JsonOption = False,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the newest N records.")] = None,
    session: Annotated[str | None, typer.Option(help="Only this agent session.")] = None,
    channel: Annotated[str | None, typer.Option(help="Only this channel (mcp, shell, browser, http).")] = None,
    status: Annotated[str | None, typer.Option(help="Only this status (complete, started, pending, interrupted, skipped).")] = None,
    recording: Annotated[str | None, typer.Option(help="Only this named recording.")] = None,
    route: Annotated[str | None, typer.Option(help="Only this route (real, sim, replay, shadow, deny).")] = None,
    tool: Annotated[str | None, typer.Option(help="Only this tool (TOOL or SERVER.TOOL).")] = None,
    since: Annotated[str | None, typer.Option(help="Only records from the last 10m, 2h, 1d…, or since an ISO date.")] = None,
    divergent: Annotated[bool, typer.Option("--divergent", help="Only shadowed calls whose two sides diverged.")] = False,
) -> None:
    """Print the records of routed calls, oldest first."""
    from router.types import Route
    from shadow.store.queries import QueryError, parse_since

    if route is not None and route not in {r.value for r in Route}:
        raise typer.BadParameter(f"must be one of {', '.join(r.value for r in Route)}, got {route!r}", param_hint="--route")
    cfg = load_or_exit(config)
    try:
        since_ts = parse_since(since) if since else None
    except QueryError as exc:
        raise typer.BadParameter(str(exc), param_hint="--since") from exc
    server, _, tool_name = tool.rpartition(".") if tool else ("", "", None)
    filters = dict(
        session=session,
        channel=channel,
        status=status,
        recording=recording,
        route=route,
        tool=tool_name,
        server=server or None,
        since=since_ts,
        divergent=divergent,
    )
    rows = read_store(cfg, lambda store: store.recent(limit=limit, **filters))
    for row in rows:
        if as_json:
            print_json(row)
        else:
            divergence = f"  {row['divergence']:.3f} {row.get('divergence_kind') or ''}" if row.get("divergence") is not None else ""
            perturbed = row.get("perturbation")
            if perturbed:
                divergence += f"  perturbed {perturbed['kind']} ({perturbed['rule']}, call {perturbed['n']})"
            typer.echo(
                f"{row['id'][:12]}  {row['session'][:14]:14} #{row['step']:<3} {row['server']}.{row['tool']:<22} "
                f"{row['route']:7} {row['provenance']:7} {row['latency_ms']:9.2f} ms  {row['policy']}  {row.get('status', '')}{divergence}"
            )


def recordings(
    config: ConfigOption = None,
    as_json: JsonOption = False,
    token: Annotated[list[str] | None, typer.Option(help="Only the sessions of this token's namespace; repeatable.")] = None,
) -> None:
    """List the named recordings (`replay.recording`) in the store; with --token, as
    those token namespaces made them (sessions and records counted there only)."""
    cfg = load_or_exit(config)
    for name in token or ():
        if not name or "/" in name:
            raise typer.BadParameter(f"a token namespace is a token's name without '/', got {name!r}", param_hint="--token")
    namespaces = tuple(f"{name}/" for name in token) if token else None
    found = read_store(cfg, lambda store: store.recordings(namespaces=namespaces))
    if as_json:
        for info in found:
            print_json(dataclasses.asdict(info))
        return
    if not found:
        typer.echo("simroute: no named recordings (set replay.recording: NAME while recording)", err=True)
    for info in found:
        typer.echo(
            f"{info.name:24} {info.sessions:5} session(s) {info.records:7} record(s)  {_when(info.first_ts)} .. {_when(info.last_ts)}"
        )


def _when(ts: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
