"""What every `simroute` command shares: the --config option, loading the config
(exit 2 with the error), reading the record store (SQLite read-only, or Redis),
and, for the commands that run a while, logging to stderr, HOST:PORT options and
a clean stop on SIGTERM; and how a report is printed (tables sized for where stdout
goes, or `--json`)."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from router.config import Config, ConfigError, load_config

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="YAML config file (default: ./simroute.yaml if present)."),
]


def load_or_exit(path: Path | None, *, tokens: bool = False) -> Config:
    """The config, or exit 2 saying what is wrong with it. `tokens`: the tokens too
    (`SIMROUTE_TOKEN`, `service.tokens`), for the commands that serve and check-config:
    a bad token is a config error, said before anything starts."""
    try:
        cfg = load_config(path)
    except ConfigError as exc:
        raise config_error(exc) from exc
    if tokens:
        from router.auth import AuthConfigError, configured_tokens

        try:
            configured_tokens(cfg.service.tokens)
        except AuthConfigError as exc:
            raise config_error(exc) from exc
    return cfg


def config_error(exc: Exception) -> typer.Exit:
    """Say a config error (the first thing on stderr) and the exit to raise: status 2."""
    typer.echo(f"simroute: config error: {exc}", err=True)
    return typer.Exit(2)


def read_store[T](cfg: Config, query: Callable[[Any], Awaitable[T]]) -> T:
    """Run one read-only query against the config's store (exit 1 with the reason on failure)."""
    from records.store.protocol import StoreError

    if not cfg.store_location.exists():
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


# A reporting command's `--json`: its report as JSON on stdout, for scripts.
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print the report as JSON (one object per line) instead of tables.")
]
# Wide enough for any report's table on one line: a pipe or a log has no width to fit.
_OFF_TERMINAL_WIDTH = 10_000


def report_console() -> Any:
    """The rich console a report prints its tables on: the terminal's width on a
    terminal; elsewhere (a pipe, a file, a CI log) no width limit, so no column is cut
    to `fide…` (rich would assume 80 columns) and nothing wraps."""
    from rich.console import Console

    if sys.stdout.isatty():
        return Console()
    return Console(width=_OFF_TERMINAL_WIDTH, soft_wrap=True)


def print_json(value: Any) -> None:
    """One JSON object on its own line of stdout (a `--json` report's unit)."""
    typer.echo(json.dumps(value, ensure_ascii=False, default=str))


def log_to_stderr(verbose: bool) -> None:
    # stdout may be the MCP protocol channel: logs always go to stderr.
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def parse_host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise typer.BadParameter(f"expected HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def stop_cleanly_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C, so the runtime closes: sandboxes and browsers
    are removed, pending records flushed. (uvicorn re-raises the signal after its
    own graceful shutdown; the default action would kill the process before the
    server's lifespan closes.)"""

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)


def time_window(since: str | None, until: str | None) -> tuple[float | None, float | None]:
    """`--since`/`--until` (`2h`, `3d`, epoch seconds …) as epoch seconds, or a usage error."""
    from records.store.queries import QueryError, parse_since

    try:
        return (parse_since(since) if since else None, parse_since(until) if until else None)
    except QueryError as exc:
        raise typer.BadParameter(str(exc).replace("--since", "--since/--until")) from exc


def server_and_tool(server: str | None, tool: str | None) -> tuple[str | None, str | None]:
    """`--tool server.tool` names the server too, unless `--server` does."""
    if tool and "." in tool and server is None:
        server, _, tool = tool.rpartition(".")
    return server, tool
