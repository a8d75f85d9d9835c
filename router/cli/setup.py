"""Setting up: `simroute ca` (the CA for HTTPS interception) and `check-config`."""

from __future__ import annotations

from typing import Annotated

import typer

from router.cli.common import ConfigOption, load_or_exit


def ca(
    config: ConfigOption = None,
    regenerate: Annotated[
        bool,
        typer.Option("--regenerate", help="Replace the CA with a new one (clients must trust the new certificate)."),
    ] = False,
) -> None:
    """Create simroute's CA for HTTPS interception if it is missing; print where it is and how to trust it."""
    from router.http.ca import CAError, ensure_ca, regenerate_ca, trust_instructions

    cfg = load_or_exit(config)
    try:
        cert = regenerate_ca(cfg.ca_dir) if regenerate else ensure_ca(cfg.ca_dir)
    except (CAError, OSError) as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(trust_instructions(cert))


def check_config(
    config: ConfigOption = None,
    start: Annotated[
        bool,
        typer.Option("--start", help="Also start each MCP server and list its tools (each within startup_timeout_s)."),
    ] = False,
) -> None:
    """Validate a config file (and the tokens: SIMROUTE_TOKEN, service.tokens) and print what it configures.

    Exits 1 naming each MCP server that cannot start: a stdio server whose command is not on its PATH (with
    `--start`: any server that does not finish its handshake and list its tools)."""
    cfg = load_or_exit(config, tokens=True)
    rehearsal = (
        f" with rehearsal ({len(cfg.rehearsal.allow)} allow rule(s), diverted calls get {cfg.rehearsal.on_divert})"
        if cfg.rehearsal.enabled
        else ""
    )
    typer.echo(
        f"{cfg.source}: ok — mode {cfg.mode}{rehearsal}, {len(cfg.upstreams)} server(s), {len(cfg.rules)} rule(s), "
        f"store {cfg.store_location.name}"
    )
    failed = _servers_that_cannot_start(cfg, start=start)
    for server, problem in failed:
        typer.echo(f"simroute: server {server!r} cannot start: {problem}", err=True)
    if failed:
        raise typer.Exit(1)


def _servers_that_cannot_start(cfg, *, start: bool) -> list[tuple[str, str]]:
    import asyncio

    from backends.mcp.check import command_problem, start_problem

    failed = [
        (server, problem)
        for server, spec in cfg.real_upstreams.items()
        if (problem := command_problem(spec)) is not None
    ]
    if not start:
        return failed
    for server, spec in cfg.real_upstreams.items():
        if server in dict(failed):
            continue
        problem, tools = asyncio.run(start_problem(server, spec, timeout_s=cfg.startup_timeout_s))
        if problem is not None:
            failed.append((server, problem))
        else:
            typer.echo(f"server {server!r}: started, {tools} tool(s)")
    return failed
