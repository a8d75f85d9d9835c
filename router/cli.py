"""The `simroute` command line."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Annotated

# fastmcp's rich tracebacks render every frame's locals: seconds per error on a
# busy router (and they block the event loop). Plain logging, set before fastmcp loads.
os.environ.setdefault("FASTMCP_ENABLE_RICH_LOGGING", "false")
os.environ.setdefault("FASTMCP_ENABLE_RICH_TRACEBACKS", "false")

import typer  # noqa: E402

from router.config import Config, ConfigError, load_config  # noqa: E402

app = typer.Typer(no_args_is_help=True, add_completion=False, help="simroute: route an agent's tool calls to real or simulated environments.")

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="YAML config file (default: ./simroute.yaml if present)."),
]


def _load(path: Path | None) -> Config:
    try:
        return load_config(path)
    except ConfigError as exc:
        typer.echo(f"simroute: config error: {exc}", err=True)
        raise typer.Exit(2) from exc


def _log_to_stderr(verbose: bool) -> None:
    # stdout may be the MCP protocol channel: logs always go to stderr.
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _parse_host_port(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise typer.BadParameter(f"expected HOST:PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


@app.command()
def mcp(
    config: ConfigOption = None,
    http: Annotated[str | None, typer.Option(help="Serve streamable HTTP on HOST:PORT instead of stdio.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Serve simroute as an MCP server (stdio by default): the configured servers' tools and simroute's own (shell, browser)."""
    _log_to_stderr(verbose)
    cfg = _load(config)
    if not cfg.upstreams and not cfg.local_channels():
        typer.echo("simroute: config error: nothing to serve: no MCP servers configured (mcpServers) and simroute's own tools are disabled", err=True)
        raise typer.Exit(2)
    from router.app import Runtime
    from router.mcp.server import build_server

    server = build_server(Runtime(cfg))
    _stop_cleanly_on_sigterm()
    if http:
        host, port = _parse_host_port(http)
        server.run(transport="http", host=host, port=port, show_banner=False, log_level="WARNING")
    else:
        from router.mcp.stdio import serve_stdio

        asyncio.run(serve_stdio(server))


@app.command()
def serve(
    config: ConfigOption = None,
    mcp_address: Annotated[str, typer.Option("--mcp", help="Serve MCP (streamable HTTP) on HOST:PORT.")] = "127.0.0.1:8765",
    http_proxy_port: Annotated[
        int | None, typer.Option("--http-proxy", min=0, max=65535, help="The HTTP(S) proxy's port (default: http.port).")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Serve every channel from one process: MCP over streamable HTTP and the HTTP(S) proxy, on one runtime.

    One record store, one world model, and agent sessions shared across channels (X-Simroute-Session).
    """
    _log_to_stderr(verbose)
    if not verbose:  # mitmproxy logs every connection at INFO
        logging.getLogger("mitmproxy").setLevel(logging.WARNING)
    cfg = _load(config)
    if not cfg.upstreams and not cfg.local_channels() and not cfg.http.enabled:
        typer.echo("simroute: config error: nothing to serve: no MCP servers, simroute's own tools and the HTTP channel are disabled", err=True)
        raise typer.Exit(2)
    host, port = _parse_host_port(mcp_address)
    from router.app import Runtime
    from router.mcp.server import build_server

    from router.http.proxy import HttpProxy, ProxyStartError

    runtime = Runtime(cfg)
    services = [HttpProxy(runtime, cfg.http, port=http_proxy_port)] if cfg.http.enabled else []
    server = build_server(runtime, services=services)
    _stop_cleanly_on_sigterm()
    typer.echo(f"simroute: serving MCP on http://{host}:{port}/mcp", err=True)  # the proxy logs its own address
    try:
        server.run(transport="http", host=host, port=port, show_banner=False, log_level="WARNING")
    except ProxyStartError as exc:  # raised while the server starts: nothing was served
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc


def _stop_cleanly_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C, so the runtime closes: sandboxes and browsers
    are removed, pending records flushed. (uvicorn re-raises the signal after its
    own graceful shutdown; the default action would kill the process before the
    server's lifespan closes.)"""

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)


@app.command()
def records(
    config: ConfigOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the newest N records.")] = None,
    session: Annotated[str | None, typer.Option(help="Only this agent session.")] = None,
    channel: Annotated[str | None, typer.Option(help="Only this channel (mcp, shell, browser, http).")] = None,
) -> None:
    """Print the records of routed calls, oldest first."""
    from shadow.sqlite_store import SQLiteStore, StoreError

    cfg = _load(config)
    if not cfg.store_path.exists():
        typer.echo(f"simroute: no records yet ({cfg.store_path} does not exist)", err=True)
        raise typer.Exit(1)
    store = SQLiteStore(cfg.store_path)
    try:
        rows = store.recent(limit=limit, session=session, channel=channel)
    except StoreError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    finally:
        store.close()
    for row in rows:
        if as_json:
            typer.echo(json.dumps(row, ensure_ascii=False))
        else:
            typer.echo(
                f"{row['id'][:12]}  {row['session'][:14]:14} #{row['step']:<3} {row['server']}.{row['tool']:<22} "
                f"{row['route']:7} {row['provenance']:7} {row['latency_ms']:9.2f} ms  {row['policy']}"
            )


@app.command()
def drain(
    config: ConfigOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Complete shadow work left pending by a stopped simroute (simulate, compare, store)."""
    _log_to_stderr(verbose)
    cfg = _load(config)
    from router.app import Runtime

    async def run() -> int:
        runtime = Runtime(cfg)
        runtime.store.open()
        try:
            return await runtime.shadow.drain()
        finally:
            await runtime.world_model.aclose()
            runtime.store.close()

    completed = asyncio.run(run())
    typer.echo(f"simroute: completed {completed} pending shadow record(s)")


@app.command("http-proxy")
def http_proxy(
    config: ConfigOption = None,
    port: Annotated[int | None, typer.Option("--port", "-p", min=0, max=65535, help="Listen on this port (default: http.port; 0: any free port).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Run the HTTP(S) channel alone: a proxy that routes every request (point HTTP_PROXY/HTTPS_PROXY at it)."""
    _log_to_stderr(verbose)
    if not verbose:  # mitmproxy logs every connection at INFO
        logging.getLogger("mitmproxy").setLevel(logging.WARNING)
    cfg = _load(config)
    if not cfg.http.enabled:
        typer.echo(f"simroute: config error: {cfg.source}: http.enabled is false: the HTTP channel is turned off", err=True)
        raise typer.Exit(2)
    # This command serves the HTTP channel only: no sandboxes or browsers are started for it.
    cfg.shell.enabled = False
    cfg.browser.enabled = False
    raise typer.Exit(asyncio.run(_serve_http_proxy(cfg, port)))


async def _serve_http_proxy(cfg: Config, port: int | None) -> int:
    from router.app import Runtime
    from router.http.proxy import HttpProxy, ProxyStartError

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with Runtime(cfg) as runtime:
        proxy = HttpProxy(runtime, cfg.http, port=port)
        try:
            await proxy.start()
        except (ProxyStartError, OSError) as exc:
            typer.echo(f"simroute: {exc}", err=True)
            return 1
        typer.echo(f"simroute: HTTP(S) proxy listening on http://{cfg.http.listen_host}:{proxy.port} ({cfg.http.mode})", err=True)
        try:
            await stop.wait()
        finally:
            await proxy.aclose()
    return 0


@app.command()
def ca(config: ConfigOption = None) -> None:
    """Create simroute's CA for HTTPS interception if it is missing; print where it is and how to trust it."""
    from router.http.ca import ensure_ca, trust_instructions

    cfg = _load(config)
    try:
        cert = ensure_ca(cfg.ca_dir)
    except OSError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(trust_instructions(cert))


@app.command("check-config")
def check_config(config: ConfigOption = None) -> None:
    """Validate a config file and print what it configures."""
    cfg = _load(config)
    typer.echo(f"{cfg.source}: ok — mode {cfg.mode}, {len(cfg.upstreams)} server(s), {len(cfg.rules)} rule(s), store {cfg.store_path}")


@app.command()
def demo(
    workdir: Annotated[Path, typer.Option(help="Where the demo writes its config and records.")] = Path(".simroute-demo"),
) -> None:
    """Run simroute in front of a real MCP server, a shell sandbox and a web API: real, replayed, simulated, shadowed and denied calls."""
    from router.demo import run_demo

    raise typer.Exit(asyncio.run(run_demo(workdir)))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
