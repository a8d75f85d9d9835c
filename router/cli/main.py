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

from router.cli.common import ConfigOption, load_or_exit, read_store  # noqa: E402
from router.cli.learned import evaluate, reload, train  # noqa: E402
from router.cli.shadow import diff, noise  # noqa: E402
from router.config import Config  # noqa: E402

app = typer.Typer(no_args_is_help=True, add_completion=False, help="simroute: route an agent's tool calls to real or simulated environments.")



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
    if not verbose:  # the browser's proxy (mitmproxy) logs every connection at INFO
        logging.getLogger("mitmproxy").setLevel(logging.WARNING)
    cfg = load_or_exit(config)
    if not cfg.upstreams and not cfg.local_channels():
        typer.echo("simroute: config error: nothing to serve: no MCP servers configured (mcpServers) and simroute's own tools are disabled", err=True)
        raise typer.Exit(2)
    from router.runtime.runtime import Runtime
    from router.auth import AuthConfigError
    from router.mcp.http_guard import http_run_options
    from router.mcp.server import build_server

    try:
        runtime = Runtime(cfg)
        options = http_run_options(runtime, _parse_host_port(http)[0]) if http else {}
    except AuthConfigError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(2) from exc
    server = build_server(runtime)
    _stop_cleanly_on_sigterm()
    if http:
        from router.dashboard.wiring import mount, runtime_dashboard

        mount(server, runtime_dashboard(runtime))  # /dashboard and /metrics beside /mcp, as `serve` has them
        host, port = _parse_host_port(http)
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
    cfg = load_or_exit(config)
    if not cfg.upstreams and not cfg.local_channels() and not cfg.http.enabled:
        typer.echo("simroute: config error: nothing to serve: no MCP servers, simroute's own tools and the HTTP channel are disabled", err=True)
        raise typer.Exit(2)
    host, port = _parse_host_port(mcp_address)
    from router.runtime.runtime import Runtime
    from router.auth import AuthConfigError
    from router.http.proxy import ProxyStartError
    from router.mcp.http_guard import http_run_options
    from router.mcp.server import build_server

    try:
        runtime = Runtime(cfg, http_channel_port=(cfg.http.port if http_proxy_port is None else http_proxy_port) if cfg.http.enabled else None)
        options = http_run_options(runtime, host)
    except AuthConfigError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(2) from exc
    server = build_server(runtime)
    from router.dashboard.wiring import mount, runtime_dashboard

    mount(server, runtime_dashboard(runtime))
    _stop_cleanly_on_sigterm()
    typer.echo(f"simroute: serving MCP on http://{host}:{port}/mcp, the dashboard on http://{host}:{port}/dashboard", err=True)  # the proxy logs its own address
    try:
        server.run(transport="http", host=host, port=port, show_banner=False, log_level="WARNING", **options)
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
def dashboard(
    config: ConfigOption = None,
    host: Annotated[str, typer.Option("--host", help="Listen on this address (beyond loopback a token is required).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Listen on this port.")] = 8766,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Serve the divergence dashboard (/dashboard) and Prometheus metrics (/metrics) on the config's record store."""
    _log_to_stderr(verbose)
    cfg = load_or_exit(config)
    from router.auth import AuthConfigError, check_bind, configured_tokens
    from router.dashboard.wiring import standalone_app

    try:
        tokens = configured_tokens(cfg.service.tokens)
        check_bind(host, tokens, what="the dashboard")
    except AuthConfigError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(2) from exc
    if cfg.store.redis_url is None and not cfg.store_path.exists():
        typer.echo(f"simroute: no records yet ({cfg.store_path} does not exist)", err=True)
        raise typer.Exit(1)
    import uvicorn

    _stop_cleanly_on_sigterm()
    typer.echo(f"simroute: serving the dashboard on http://{host}:{port}/dashboard", err=True)
    uvicorn.run(standalone_app(cfg, tokens), host=host, port=port, log_level="warning")


@app.command()
def records(
    config: ConfigOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
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
    filters = dict(session=session, channel=channel, status=status, recording=recording, route=route, tool=tool_name, server=server or None,
                   since=since_ts, divergent=divergent)
    rows = read_store(cfg, lambda store: store.recent(limit=limit, **filters))
    for row in rows:
        if as_json:
            typer.echo(json.dumps(row, ensure_ascii=False))
        else:
            divergence = f"  {row['divergence']:.3f} {row.get('divergence_kind') or ''}" if row.get("divergence") is not None else ""
            typer.echo(
                f"{row['id'][:12]}  {row['session'][:14]:14} #{row['step']:<3} {row['server']}.{row['tool']:<22} "
                f"{row['route']:7} {row['provenance']:7} {row['latency_ms']:9.2f} ms  {row['policy']}  {row.get('status', '')}{divergence}"
            )


@app.command()
def recordings(config: ConfigOption = None) -> None:
    """List the named recordings (`replay.recording`) in the store."""
    cfg = load_or_exit(config)
    found = read_store(cfg, lambda store: store.recordings())
    if not found:
        typer.echo("simroute: no named recordings (set replay.recording: NAME while recording)", err=True)
    for info in found:
        typer.echo(f"{info.name:24} {info.sessions:5} session(s) {info.records:7} record(s)  {_when(info.first_ts)} .. {_when(info.last_ts)}")


def _when(ts: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


@app.command()
def drain(
    config: ConfigOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Complete shadow work left pending by a stopped simroute (simulate, compare, store)."""
    _log_to_stderr(verbose)
    cfg = load_or_exit(config)
    from router.runtime.runtime import Runtime

    async def run():
        runtime = Runtime(cfg)
        await runtime.open_store()
        try:
            return await runtime.shadow.drain()
        finally:
            await runtime.world_model.aclose()
            await runtime.records.aclose()
            await runtime.store.aclose()

    report = asyncio.run(run())
    typer.echo(f"simroute: completed {report.completed} pending shadow record(s)")
    for failure in report.failed:
        typer.echo(f"simroute: not completed: {failure}", err=True)
    if report.failed:
        raise typer.Exit(1)


@app.command()
def prune(config: ConfigOption = None) -> None:
    """Delete records past the store's retention (store.max_age, store.max_records); named recordings stay."""
    cfg = load_or_exit(config)
    if cfg.store.max_age is None and cfg.store.max_records is None:
        typer.echo(f"simroute: config error: {cfg.source}: set store.max_age and/or store.max_records to prune", err=True)
        raise typer.Exit(2)
    from router.runtime.runtime import Runtime

    async def run() -> int:
        runtime = Runtime(cfg)
        await runtime.store.open()
        try:
            return await runtime.prune()
        finally:
            await runtime.store.aclose()

    typer.echo(f"simroute: pruned {asyncio.run(run())} record(s)")


@app.command()
def worker(
    config: ConfigOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Consume shadow work from the Redis store's stream: simulate, compare, complete the records (store.url: redis://…)."""
    _log_to_stderr(verbose)
    cfg = load_or_exit(config)
    if cfg.store.redis_url is None:
        typer.echo(f"simroute: config error: {cfg.source}: simroute worker needs store.url: redis://host:port/db (with SQLite, routers do their own shadow work)", err=True)
        raise typer.Exit(2)
    raise typer.Exit(asyncio.run(_run_worker(cfg)))


async def _run_worker(cfg: Config) -> int:
    from router.runtime.runtime import Runtime
    from shadow.worker import ShadowWorker

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    runtime = Runtime(cfg)
    await runtime.open_store()
    worker = await ShadowWorker(runtime.store, runtime.shadow_runner, claim_after_s=cfg.shadow.claim_after_s).start()
    typer.echo(f"simroute: shadow worker {worker.name} consuming {cfg.store.redis_url}", err=True)
    running = loop.create_task(worker.run_forever(), name="simroute-shadow-worker")
    try:
        await stop.wait()
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await runtime.world_model.aclose()
        await runtime.records.aclose()
        await runtime.store.aclose()
    return 0


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
    cfg = load_or_exit(config)
    if not cfg.http.enabled:
        typer.echo(f"simroute: config error: {cfg.source}: http.enabled is false: the HTTP channel is turned off", err=True)
        raise typer.Exit(2)
    # This command serves the HTTP channel only: no sandboxes or browsers are started for it.
    cfg.shell.enabled = False
    cfg.browser.enabled = False
    raise typer.Exit(asyncio.run(_serve_http_proxy(cfg, port)))


async def _serve_http_proxy(cfg: Config, port: int | None) -> int:
    from router.runtime.runtime import Runtime
    from router.auth import AuthConfigError
    from router.http.proxy import ProxyStartError

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        runtime = Runtime(cfg, http_channel_port=cfg.http.port if port is None else port)
    except AuthConfigError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        return 2
    try:
        await runtime.start()
    except (ProxyStartError, OSError) as exc:
        typer.echo(f"simroute: {exc}", err=True)
        await runtime.aclose()
        return 1
    try:
        typer.echo(f"simroute: HTTP(S) proxy listening on http://{cfg.http.listen_host}:{runtime.http_port} ({cfg.http.mode})", err=True)
        await stop.wait()
    finally:
        await runtime.aclose()
    return 0


@app.command()
def ca(
    config: ConfigOption = None,
    regenerate: Annotated[bool, typer.Option("--regenerate", help="Replace the CA with a new one (clients must trust the new certificate).")] = False,
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


@app.command("check-config")
def check_config(config: ConfigOption = None) -> None:
    """Validate a config file and print what it configures."""
    cfg = load_or_exit(config)
    rehearsal = f" with rehearsal ({len(cfg.rehearsal.allow)} allow rule(s), diverted calls get {cfg.rehearsal.on_divert})" if cfg.rehearsal.enabled else ""
    typer.echo(f"{cfg.source}: ok — mode {cfg.mode}{rehearsal}, {len(cfg.upstreams)} server(s), {len(cfg.rules)} rule(s), store {cfg.store.redis_url or cfg.store_path}")


@app.command()
def explain(
    config: ConfigOption = None,
    call: Annotated[str | None, typer.Option("--call", help="One call as JSON: channel, name (or tool), server, arguments.")] = None,
    calls: Annotated[Path | None, typer.Option("--calls", help="A JSON-lines file of calls ('-': stdin), explained in one process.")] = None,
) -> None:
    """Print, as JSON, how simroute would route a call, without executing anything.

    Route, deciding policy and reason, safety class and reason, and the rules tried. No upstream,
    sandbox, browser or model is started; the config and the store's tool snapshots are read.
    Examples: --call '{"channel": "shell", "name": "shell_exec", "arguments": {"command": "rm -rf build"}}',
    --call '{"channel": "http", "name": "POST https://api.example.com/v1/charges", "arguments": {"body": {"amount": 5}}}'.
    """
    from router.reports.explain import CallFormatError, Explainer, call_from_json, read_calls
    from router.engine.tool_catalog import ToolCatalog

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
        from router.cli.learned import loaded_policy

        try:
            learned = loaded_policy(cfg)
        except ModelLoadError as exc:
            typer.echo(f"simroute: {exc}", err=True)
            raise typer.Exit(1) from exc
    explainer = Explainer(cfg, catalog=catalog, learned=learned)
    if call is not None:
        entries = list(read_calls(iter([call])))
        source = "--call"
    else:
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
            result = explainer.explain(call_from_json(data, cfg))
        except CallFormatError as exc:
            failed += 1
            result = {"error": f"{source}:{number}: {exc}" if calls is not None else f"--call: {exc}"}
        typer.echo(json.dumps(result, ensure_ascii=False))
    if failed:
        raise typer.Exit(2)


@app.command()
def demo(
    workdir: Annotated[Path, typer.Option(help="Where the demo writes its config and records.")] = Path(".simroute-demo"),
) -> None:
    """Run simroute in front of a real MCP server, a shell sandbox and a web API: real, replayed, simulated, shadowed and denied calls."""
    from router.cli.demo import run_demo

    raise typer.Exit(asyncio.run(run_demo(workdir)))


app.command()(noise)
app.command()(diff)
app.command()(train)
app.command("eval")(evaluate)
app.command()(reload)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
