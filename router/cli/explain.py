"""`simroute explain`: how a call would be routed, as JSON, without executing anything
(the decision itself: router/reports/explain.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from router.cli.common import ConfigOption, load_or_exit


def explain(
    config: ConfigOption = None,
    call: Annotated[
        str | None, typer.Option("--call", help="One call as JSON: channel, name (or tool), server, arguments.")
    ] = None,
    calls: Annotated[
        Path | None, typer.Option("--calls", help="A JSON-lines file of calls ('-': stdin), explained in one process.")
    ] = None,
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            help=(
                "A recorded session: its world state (rebuilt from "
                "its records) and what it answers a shell or HTTP call."
            ),
        ),
    ] = None,
) -> None:
    """Print, as JSON, how simroute would route a call, without executing anything.

    Route, deciding policy and reason, safety class and reason, and the rules tried. No upstream,
    sandbox, browser or model is started; the config and the store's tool snapshots are read.
    Examples: --call '{"channel": "shell", "name": "shell_exec", "arguments": {"command": "rm -rf build"}}',
    --call '{"channel": "http", "name": "POST https://api.example.com/v1/charges",
    "arguments": {"body": {"amount": 5}}}'.
    """
    from router.engine.tool_catalog import ToolCatalog
    from router.reports.explain import CallFormatError, Explainer, call_from_json, read_calls

    if (call is None) == (calls is None):
        typer.echo("simroute: explain needs exactly one of --call JSON or --calls FILE", err=True)
        raise typer.Exit(2)
    cfg = load_or_exit(config)
    catalog = ToolCatalog()
    try:
        catalog.load_store(cfg.store_path)
    except OSError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    learned = None
    if cfg.uses_learned():
        from policies.errors import ModelLoadError
        from router.cli.learned import stored_rows
        from router.reports.learned_policy import loaded_policy

        try:
            learned = loaded_policy(cfg, rows=stored_rows(cfg))
        except ModelLoadError as exc:
            typer.echo(f"simroute: {exc}", err=True)
            raise typer.Exit(1) from exc
    explainer = Explainer(cfg, catalog=catalog, learned=learned)
    world, forked = _session_world(cfg, session) if session is not None else (None, [])
    if call is not None:
        entries = list(read_calls(iter([call])))
        source = "--call"
    else:
        assert calls is not None  # exactly one of --call and --calls (checked above)
        try:
            text = sys.stdin.read() if str(calls) == "-" else calls.read_text(encoding="utf-8")
        except OSError as exc:
            typer.echo(f"simroute: cannot read {calls}: {exc.strerror or exc}", err=True)
            raise typer.Exit(1) from exc
        entries = list(read_calls(iter(text.splitlines())))
        source = str(calls)
    failed = 0
    for number, data in entries:
        try:
            if isinstance(data, CallFormatError):
                raise data
            explained = call_from_json(data, cfg)
            result = explainer.explain(explained)
            if world is not None:
                from router.reports.world_state import would_answer

                result["world_state"] = {
                    "session": session,
                    **world.summary(),
                    "sim_answer": would_answer(world, explained),
                }
                # Where the session diverged into a fork (its calls since then ran there).
                result["fork_divergence"] = forked
        except CallFormatError as exc:
            failed += 1
            result = {"error": f"{source}:{number}: {exc}" if calls is not None else f"--call: {exc}"}
        typer.echo(json.dumps(result, ensure_ascii=False))
    if failed:
        raise typer.Exit(2)


def _session_world(cfg, session: str):
    """The session's world state rebuilt from the store's records (any store), and where
    it diverged into forks."""
    import asyncio

    from records.fork_point import divergence_points
    from router.reports.world_state import session_world

    async def read():
        store = cfg.open_store(read_only=True)
        await store.open()
        try:
            world = await session_world(store, session)
            return world, divergence_points(await store.recent(session=session))
        finally:
            await store.aclose()

    return asyncio.run(read())
