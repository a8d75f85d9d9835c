"""`simroute serve` launched as a user launches it, on a config this example writes:
the HTTP channel on (episodes' `http_request` goes through it), no shell, no browser,
no world model (nothing here is simulated by a model: the training episodes replay a
recording under a perturbation plan), and a replay miss is an error — never a quiet
real call."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

RECORDING = "catalog-crawl"


def write_config(folder: Path, *, record: bool) -> Path:
    """The config of a server that records real episodes as the named recording
    (`record`), or of one that trains and evaluates (replays from it, never tags)."""
    replay: dict = {"on_miss": "error"}
    if record:
        replay["recording"] = RECORDING  # every session this process records carries the name
    config = {
        "store": {"path": str(folder / "records.db")},  # both servers share the records
        "shell": {"enabled": False},
        "browser": {"enabled": False},
        "http": {
            "ca_dir": str(folder / ("ca-record" if record else "ca")),
            "port": 0,
        },  # one CA each: they start together
        "replay": replay,
    }
    path = folder / ("record.yaml" if record else "train.yaml")
    path.write_text(json.dumps(config, indent=2))  # JSON is YAML
    return path


def _simroute() -> str:
    beside = Path(sys.executable).parent / "simroute"  # the virtualenv this runs in
    return str(beside) if beside.exists() else (shutil.which("simroute") or "simroute")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serving(*configs: Path, timeout_s: float = 120.0) -> Iterator[list[str]]:
    """`simroute serve --config CONFIG --mcp 127.0.0.1:PORT` for each config, started
    together (their start-ups overlap); yields their base URLs once each answers."""
    launched: list[tuple[subprocess.Popen, str, Path]] = []
    try:
        for config in configs:
            port, log = _free_port(), config.with_suffix(".log")
            with log.open("w") as out:
                process = subprocess.Popen(
                    [_simroute(), "serve", "--config", str(config), "--mcp", f"127.0.0.1:{port}"],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, "PYTHONUNBUFFERED": "1"},
                )
            launched.append((process, f"http://127.0.0.1:{port}", log))
        deadline = time.monotonic() + timeout_s
        for process, url, log in launched:
            _wait_ready(process, url, log, deadline)
        yield [url for _, url, _ in launched]
    finally:
        for process, _, _ in launched:
            stop(process)


def _wait_ready(process: subprocess.Popen, url: str, log: Path, deadline: float) -> None:
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"simroute serve exited ({process.returncode}):\n{log.read_text()}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"{url}/health", timeout=2):
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"simroute serve did not answer in time:\n{log.read_text()}")
        time.sleep(0.1)


def stop(process: subprocess.Popen) -> None:
    """Stop a server (idempotent): SIGTERM, then SIGKILL after 15 s."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
