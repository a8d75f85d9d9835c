"""What the episode benchmarks share: the instant world model in its own process,
`simroute serve` launched as a user launches it, configs, percentiles, and the
resident memory of a process."""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from router.cli.launch import free_port, stop, wait_for_port

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SIMROUTE = str(Path(sys.executable).parent / "simroute")
# The project's own stdio MCP server (echo and more): a real upstream to record from.
TOOLBOX = {"command": sys.executable, "args": [str(ROOT / "tests" / "servers" / "toolbox.py")]}
# What the stub answers for `echo` (its output schema: {"result": str}).
SIMULATED_ECHO = '{"result": "simulated"}'


@dataclass
class ModelStub:
    url: str  # the OpenAI base URL (…/v1)
    stats_url: str

    def world_model(self) -> dict[str, Any]:
        return {"engine": "openai", "url": self.url, "model": "stub"}


@contextlib.contextmanager
def model_stub(answer: str = SIMULATED_ECHO) -> Iterator[ModelStub]:
    """The instant world model (benchmarks/_model_stub.py) in its own process."""
    process = subprocess.Popen(
        [sys.executable, str(HERE / "_model_stub.py"), "--answer", answer], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield ModelStub(f"http://127.0.0.1:{port}/v1", f"http://127.0.0.1:{port}/stats")
    finally:
        stop(process)


def write_config(directory: Path, **sections: Any) -> Path:
    """A config in `directory`: the store there, simroute's own channels and the HTTP
    channel off unless a section turns them on (the shell's warm pool would otherwise
    start sandboxes, the proxy a port, neither measured)."""
    config = {
        "store": {"path": str(directory / "records.db")},
        "shell": {"enabled": False},
        "browser": {"enabled": False},
        "http": {"enabled": False, "ca_dir": str(directory / "ca")},
        **sections,
    }
    path = directory / "simroute.yaml"
    path.write_text(json.dumps(config, indent=2))  # JSON is YAML
    return path


@dataclass
class Served:
    port: int
    pid: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def serving(config: Path, log: Path) -> Iterator[Served]:
    """`simroute serve` as a user launches it (MCP and episodes on one port)."""
    port = free_port()
    with log.open("w") as out:
        process = subprocess.Popen(
            [SIMROUTE, "serve", "--config", str(config), "--mcp", f"127.0.0.1:{port}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            wait_for_port(port, process, timeout_s=60, describe=log.read_text)
            yield Served(port, process.pid)
        finally:
            stop(process)


def rss_kb(pid: int) -> int:
    """Resident memory of a process (VmRSS in /proc/PID/status), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def percentile(samples: list[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..1): a value that was measured."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())
