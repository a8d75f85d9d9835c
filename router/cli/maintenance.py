"""Store and shadow-work maintenance: `simroute drain` (pending shadow work, here),
`prune` (the store's retention) and `worker` (shadow work from a Redis stream)."""

from __future__ import annotations

import asyncio
import signal
from typing import Annotated

import typer

from router.cli.common import ConfigOption, load_or_exit, log_to_stderr
from router.config import Config


def drain(
    config: ConfigOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Complete shadow work left pending by a stopped simroute (simulate, compare, store)."""
    log_to_stderr(verbose)
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


def prune(config: ConfigOption = None) -> None:
    """Delete records past the store's retention (store.max_age, store.max_records); named recordings stay."""
    cfg = load_or_exit(config)
    if cfg.store.max_age is None and cfg.store.max_records is None:
        typer.echo(
            f"simroute: config error: {cfg.source}: set store.max_age and/or store.max_records to prune", err=True
        )
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


def worker(
    config: ConfigOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Consume shadow work from the Redis store's stream: simulate, compare, complete the records (store.url: redis://…)."""
    log_to_stderr(verbose)
    cfg = load_or_exit(config)
    location = cfg.store_location
    if location.shared_state(location.open_store()).shadow_stream() is None:  # one router: nothing to consume
        typer.echo(
            f"simroute: config error: {cfg.source}: simroute worker needs store.url: redis://host:port/db (with "
            "SQLite, routers do their own shadow work)",
            err=True,
        )
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
    stream = runtime.shared_state.shadow_stream()
    assert stream is not None  # `worker` refuses a config whose store is not shared
    worker = await ShadowWorker(
        stream, runtime.store, runtime.shadow_runner, claim_after_s=cfg.shadow.claim_after_s
    ).start()
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
