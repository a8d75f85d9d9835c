"""`simroute records` and `simroute recordings`: what the store holds, printed;
`simroute tag-recording`: a finished episode's real answers named as a recording."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Annotated

import typer

from router.cli.common import ConfigOption, JsonOption, load_or_exit, print_json, read_store
from router.cli.filter_options import ChannelOption, SessionOption, SinceOption, ToolOption


def records(
    config: ConfigOption = None,
    as_json: JsonOption = False,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the newest N records.")] = None,
    session: SessionOption = None,
    channel: ChannelOption = None,
    status: Annotated[
        str | None, typer.Option(help="Only this status (complete, started, pending, interrupted, skipped).")
    ] = None,
    recording: Annotated[str | None, typer.Option(help="Only this named recording.")] = None,
    route: Annotated[str | None, typer.Option(help="Only this route (real, sim, replay, shadow, deny, fork).")] = None,
    tool: ToolOption = None,
    since: SinceOption = None,
    divergent: Annotated[
        bool, typer.Option("--divergent", help="Only shadowed calls whose two sides diverged.")
    ] = False,
) -> None:
    """Print the records of routed calls, oldest first."""
    from calls import Route
    from records import fork_point
    from records.store.queries import QueryError, parse_since

    if route is not None and route not in {r.value for r in Route}:
        raise typer.BadParameter(
            f"must be one of {', '.join(r.value for r in Route)}, got {route!r}", param_hint="--route"
        )
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
    seen: set[str] = set()
    for row in rows:
        # Where a session diverged into its fork: its first call there, and what was copied.
        point = fork_point.divergence(row) if fork_point.diverges_here(row, seen) else None
        if as_json:
            print_json({**row, "fork_divergence": point} if point else row)
        else:
            divergence = (
                f"  {row['divergence']:.3f} {row.get('divergence_kind') or ''}"
                if row.get("divergence") is not None
                else ""
            )
            perturbed = row.get("perturbation")
            if perturbed:
                divergence += f"  perturbed {perturbed['kind']} ({perturbed['rule']}, call {perturbed['n']})"
            typer.echo(
                f"{row['id'][:12]}  {row['session'][:14]:14} #{row['step']:<3} {row['server']}.{row['tool']:<22} "
                f"{row['route']:7} {row['provenance']:7} {row['latency_ms']:9.2f} ms  {row['policy']}  "
                f"{row.get('status', '')}{divergence}"
            )
            if point:
                typer.echo(f"{'':14}^ {fork_point.describe(point)}")


def recordings(
    config: ConfigOption = None,
    as_json: JsonOption = False,
    token: Annotated[
        list[str] | None, typer.Option(help="Only the sessions of this token's namespace; repeatable.")
    ] = None,
) -> None:
    """List the named recordings (`replay.recording`) in the store; with --token, as
    those token namespaces made them (sessions and records counted there only)."""
    cfg = load_or_exit(config)
    for name in token or ():
        if not name or "/" in name:
            raise typer.BadParameter(
                f"a token namespace is a token's name without '/', got {name!r}", param_hint="--token"
            )
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
            f"{info.name:24} {info.sessions:5} session(s) {info.records:7} "
            f"record(s)  {_when(info.first_ts)} .. {_when(info.last_ts)}"
        )


def _when(ts: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


def tag_recording(
    name: Annotated[
        str, typer.Argument(help="The recording's name (what an episode's `recording` option, or replay.from, names).")
    ],
    config: ConfigOption = None,
    episode: Annotated[
        str | None, typer.Option(help="The episode whose real answers to tag (its id, as its reset named it).")
    ] = None,
    token: Annotated[
        str | None, typer.Option(help="The token the episode was opened with (when tokens are on).")
    ] = None,
    session: Annotated[str | None, typer.Option(help="An agent session to tag, instead of an episode.")] = None,
) -> None:
    """Tag a finished episode's (or session's) real answers as a named recording, without a
    restart: a later episode's `recording: NAME` replays them."""
    from records.store.tagging import tag_recording as tag
    from router.auth import namespaced

    if (episode is None) == (session is None):
        raise typer.BadParameter("name one of --episode or --session", param_hint="--episode")
    session_id = session if session is not None else namespaced(token, f"episode-{episode}")
    cfg = load_or_exit(config)
    if not cfg.store_location.exists():
        typer.echo(f"simroute: no records yet ({cfg.store_path} does not exist)", err=True)
        raise typer.Exit(1)

    async def run():
        store = await cfg.open_store().open()
        try:
            return await tag(store, session_id, name)
        finally:
            await store.aclose()

    tagged = asyncio.run(run())
    if tagged.records == 0:
        typer.echo(f"simroute: no records of session {session_id!r}", err=True)
        raise typer.Exit(1)
    typer.echo(f"simroute: tagged {tagged.tagged} of {tagged.records} record(s) of {session_id} as recording {name!r}")
