"""Two `simroute serve` replicas on one real Redis store, launched as a user launches
them, each with a REST client of its episodes; a test may SIGKILL one mid-run."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx

from kit.episodes import Served
from kit.launch import write_config
from kit.serve import serve_process


@contextlib.contextmanager
def two_replicas(directory: Path, redis_url: str, **sections) -> Iterator[tuple[Served, Served]]:
    """Replicas `a` and `b` of one config (each its own folder: CA, spool), one store."""
    configs = []
    for name in ("a", "b"):
        (directory / name).mkdir()
        configs.append(write_config(directory / name, store={"url": redis_url}, **sections))
    with contextlib.ExitStack() as stack:
        served = []
        for config in configs:
            process, port = stack.enter_context(serve_process(config, config.parent / "serve.log"))
            http = stack.enter_context(httpx.Client(timeout=180, trust_env=False))
            served.append(Served(process, port, config.parent / "serve.log", http))
        yield served[0], served[1]


def kill(replica: Served) -> None:
    """SIGKILL: the replica gets no chance to clean up or give anything back."""
    replica.process.send_signal(signal.SIGKILL)
    replica.process.wait()
