"""The commands that serve: `simroute mcp` (stdio or streamable HTTP), `serve` (every
channel from one process), `http-proxy` (the HTTP channel alone) and `dashboard`
(the dashboard and /metrics on a store)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from typing import Annotated

import typer

from router.cli.common import (
    ConfigOption,
    config_error,
    load_or_exit,
    log_to_stderr,
    parse_host_port,
    stop_cleanly_on_sigterm,
)
from router.config import Config


def mcp(
    config: ConfigOption = None,
    http: Annotated[str | None, typer.Option(help="Serve streamable HTTP on HOST:PORT instead of stdio.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Serve simroute as an MCP server (stdio by default): the configured servers' tools and
    simroute's own (shell, browser)."""
    log_to_stderr(verbose)
    if not verbose:  # the browser's proxy (mitmproxy) logs every connection at INFO
        logging.getLogger("mitmproxy").setLevel(logging.WARNING)
    cfg = load_or_exit(config, tokens=True)
    if not cfg.upstreams and not cfg.local_channels():
        typer.echo(
            "simroute: config error: nothing to serve: no MCP servers "
            "configured (mcpServers) and simroute's own tools are disabled",
            err=True,
        )
        raise typer.Exit(2)
    from router.auth import AuthConfigError
    from router.mcp.http_guard import http_run_options
    from router.mcp.server import build_server
    from router.runtime.runtime import Runtime

    try:
        runtime = Runtime(cfg)
        options = http_run_options(runtime.mcp_parts, parse_host_port(http)[0]) if http else {}
    except AuthConfigError as exc:
        raise config_error(exc) from exc
    server = build_server(runtime.mcp_parts)
    stop_cleanly_on_sigterm()
    if http:
        from router.dashboard.wiring import mount, runtime_dashboard

        mount(server, runtime_dashboard(runtime))  # /dashboard and /metrics beside /mcp, as `serve` has them
        host, port = parse_host_port(http)
        server.run(transport="http", host=host, port=port, show_banner=False, log_level="WARNING", **options)
    else:
        from router.mcp.stdio import serve_stdio

        code = 0
        try:
            asyncio.run(serve_stdio(server))
        except SystemExit as stop:  # SIGTERM (see below)
            code = stop.code if isinstance(stop.code, int) else 0
        # The runtime has closed (records written, sandboxes removed). Leave now: after
        # SIGTERM a worker thread stays blocked reading the client's still-open stdin and
        # would hold the interpreter, and finalizing it costs about a second of the ~2 s
        # an MCP client waits after closing stdin before it terminates the server.
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(code)


def serve(
    config: ConfigOption = None,
    mcp_address: Annotated[
        str, typer.Option("--mcp", help="Serve MCP (streamable HTTP) on HOST:PORT.")
    ] = "127.0.0.1:8765",
    http_proxy_port: Annotated[
        int | None,
        typer.Option("--http-proxy", min=0, max=65535, help="The HTTP(S) proxy's port (default: http.port)."),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Serve every channel from one process: MCP over streamable HTTP and the HTTP(S) proxy, on one runtime.

    One record store, one world model, and agent sessions shared across channels (X-Simroute-Session).
    """
    log_to_stderr(verbose)
    if not verbose:  # mitmproxy logs every connection at INFO
        logging.getLogger("mitmproxy").setLevel(logging.WARNING)
    cfg = load_or_exit(config, tokens=True)
    if not cfg.upstreams and not cfg.local_channels() and not cfg.http.enabled:
        typer.echo(
            "simroute: config error: nothing to serve: no MCP servers, "
            "simroute's own tools and the HTTP channel are disabled",
            err=True,
        )
        raise typer.Exit(2)
    host, port = parse_host_port(mcp_address)
    from router.auth import AuthConfigError
    from router.http.proxy import ProxyStartError
    from router.mcp.http_guard import http_run_options
    from router.mcp.server import build_server
    from router.runtime.runtime import Runtime

    try:
        runtime = Runtime(
            cfg,
            http_channel_port=(cfg.http.port if http_proxy_port is None else http_proxy_port)
            if cfg.http.enabled
            else None,
        )
        options = http_run_options(runtime.mcp_parts, host)
    except AuthConfigError as exc:
        raise config_error(exc) from exc
    server = build_server(runtime.mcp_parts)
    from router.dashboard.wiring import mount, runtime_dashboard

    mount(server, runtime_dashboard(runtime))
    if cfg.episodes.enabled:
        from router.episodes.front_doors import mount_episodes

        mount_episodes(server, runtime.episode_parts)  # /episodes, /openapi.json, /ws (OpenEnv), /mcp/e/{id}
    stop_cleanly_on_sigterm()
    typer.echo(
        f"simroute: serving MCP on http://{host}:{port}/mcp, the dashboard on http://{host}:{port}/dashboard", err=True
    )  # the proxy logs its own address
    try:
        server.run(transport="http", host=host, port=port, show_banner=False, log_level="WARNING", **options)
    except ProxyStartError as exc:  # raised while the server starts: nothing was served
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc


def http_proxy(
    config: ConfigOption = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port", "-p", min=0, max=65535, help="Listen on this port (default: http.port; 0: any free port)."
        ),
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Run the HTTP(S) channel alone: a proxy that routes every request (point HTTP_PROXY/HTTPS_PROXY at it)."""
    log_to_stderr(verbose)
    if not verbose:  # mitmproxy logs every connection at INFO
        logging.getLogger("mitmproxy").setLevel(logging.WARNING)
    cfg = load_or_exit(config, tokens=True)
    if not cfg.http.enabled:
        typer.echo(
            f"simroute: config error: {cfg.source}: http.enabled is false: the HTTP channel is turned off", err=True
        )
        raise typer.Exit(2)
    # This command serves the HTTP channel only: no sandboxes or browsers are started for it.
    cfg.shell.enabled = False
    cfg.browser.enabled = False
    raise typer.Exit(asyncio.run(_serve_http_proxy(cfg, port)))


async def _serve_http_proxy(cfg: Config, port: int | None) -> int:
    from router.auth import AuthConfigError
    from router.http.proxy import ProxyStartError
    from router.runtime.runtime import Runtime

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        runtime = Runtime(cfg, http_channel_port=cfg.http.port if port is None else port)
    except AuthConfigError as exc:
        typer.echo(f"simroute: config error: {exc}", err=True)
        return 2
    try:
        await runtime.start()
    except (ProxyStartError, OSError) as exc:
        typer.echo(f"simroute: {exc}", err=True)
        await runtime.aclose()
        return 1
    try:
        typer.echo(
            f"simroute: HTTP(S) proxy listening on http://{cfg.http.listen_host}:{runtime.http_port} ({cfg.http.mode})",
            err=True,
        )
        await stop.wait()
    finally:
        await runtime.aclose()
    return 0


def dashboard(
    config: ConfigOption = None,
    host: Annotated[
        str, typer.Option("--host", help="Listen on this address (beyond loopback a token is required).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Listen on this port.")] = 8766,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Serve the divergence dashboard (/dashboard) and Prometheus metrics (/metrics) on the config's record store."""
    log_to_stderr(verbose)
    cfg = load_or_exit(config, tokens=True)
    from router.auth import AuthConfigError, check_bind, configured_tokens
    from router.dashboard.wiring import standalone_app

    try:
        tokens = configured_tokens(cfg.service.tokens)
        check_bind(host, tokens, what="the dashboard")
    except AuthConfigError as exc:
        raise config_error(exc) from exc
    if not cfg.store_location.exists():
        typer.echo(f"simroute: no records yet ({cfg.store_path} does not exist)", err=True)
        raise typer.Exit(1)
    import uvicorn

    stop_cleanly_on_sigterm()
    typer.echo(f"simroute: serving the dashboard on http://{host}:{port}/dashboard", err=True)
    uvicorn.run(standalone_app(cfg, tokens), host=host, port=port, log_level="warning")
