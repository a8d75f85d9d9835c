"""Setting up: `simroute ca` (the CA for HTTPS interception) and `check-config`."""

from __future__ import annotations

from typing import Annotated

import typer

from router.cli.common import ConfigOption, load_or_exit


def ca(
    config: ConfigOption = None,
    regenerate: Annotated[
        bool, typer.Option("--regenerate", help="Replace the CA with a new one (clients must trust the new certificate).")
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


def check_config(config: ConfigOption = None) -> None:
    """Validate a config file (and the tokens: SIMROUTE_TOKEN, service.tokens) and print what it configures."""
    cfg = load_or_exit(config, tokens=True)
    rehearsal = (
        f" with rehearsal ({len(cfg.rehearsal.allow)} allow rule(s), diverted calls get {cfg.rehearsal.on_divert})"
        if cfg.rehearsal.enabled
        else ""
    )
    typer.echo(
        f"{cfg.source}: ok — mode {cfg.mode}{rehearsal}, {len(cfg.upstreams)} server(s), {len(cfg.rules)} rule(s), store {cfg.store.redis_url or cfg.store_path}"
    )
