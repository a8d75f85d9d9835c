"""What every `simroute` command shares: the --config option, loading the config
(exit 2 with the error), and reading the record store (SQLite read-only, or Redis)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import typer

from pathlib import Path
from typing import Annotated

from router.config import Config, ConfigError, load_config

T = TypeVar("T")

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="YAML config file (default: ./simroute.yaml if present)."),
]


def load_or_exit(path: Path | None) -> Config:
    try:
        return load_config(path)
    except ConfigError as exc:
        typer.echo(f"simroute: config error: {exc}", err=True)
        raise typer.Exit(2) from exc


def read_store(cfg: Config, query: Callable[[Any], Awaitable[T]]) -> T:
    """Run one read-only query against the config's store (exit 1 with the reason on failure)."""
    from shadow.store.protocol import StoreError

    if cfg.store.redis_url is None and not cfg.store_path.exists():
        typer.echo(f"simroute: no records yet ({cfg.store_path} does not exist)", err=True)
        raise typer.Exit(1)

    async def run():
        store = await cfg.open_store(read_only=True).open()
        try:
            return await query(store)
        finally:
            await store.aclose()

    try:
        return asyncio.run(run())
    except StoreError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
