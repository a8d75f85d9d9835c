"""The two targets of benchmarks/stack_load.py, each an address, a token and a way to
read back its records:

- the stack: docker-compose.yml with benchmarks/stack/compose.bench.yml over it (the
  instant world-model stub, the benchmark's config), built and brought up under a
  project of its own (tests/kit/compose.py), scaled between runs;
- the baseline: one `simroute serve` on the host with the same config, only its
  addresses changed (and the time server's interpreter, the checkout's): its store a
  redis-server on the host started the way the stack's Redis is (append-only, fsync
  every second), the stub in its own process.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import yaml
from _episodes import SIMROUTE, model_stub, serving

from router.cli.launch import free_port, stop, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from kit.compose import ComposeStack  # noqa: E402  (the tests' kit, as other benchmarks import it)

STACK = ROOT / "benchmarks" / "stack"
CONFIG = STACK / "simroute.yaml"
OVERRIDE = STACK / "compose.bench.yml"
REPLICA = "x-simroute-replica"  # the balancer names the replica that served


def stub_answer() -> str:
    """What the stack's stub answers (compose.bench.yml): the baseline's says the same."""
    command = yaml.safe_load(OVERRIDE.read_text())["services"]["world-model"]["command"]
    return command[command.index("--answer") + 1]


def since_argument(started: float) -> str:
    """`simroute records --since`: an ISO date a little before `started` (clock rounding)."""
    return datetime.datetime.fromtimestamp(started - 2, datetime.UTC).isoformat(timespec="seconds")


def parse_rows(out: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert out.returncode == 0, out.stderr[-2000:]
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


@dataclass
class Baseline:
    url: str
    token: str
    config: Path

    name = "baseline"

    def records(self, since: float) -> list[dict[str, Any]]:
        command = [SIMROUTE, "records", "--json", "--config", str(self.config), "--since", since_argument(since)]
        return parse_rows(subprocess.run(command, capture_output=True, text=True, timeout=300))


@contextlib.contextmanager
def redis_like_the_stacks(folder: Path) -> Iterator[int]:
    """redis-server on a free loopback port, persisted as deploy/redis/Dockerfile's is."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed: run scripts/setup.sh")
    port = free_port()
    command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(folder)]
    process = subprocess.Popen(
        [*command, "--appendonly", "yes", "--appendfsync", "always", "--save", ""],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process, timeout_s=15)
        yield port
    finally:
        stop(process)


@contextlib.contextmanager
def baseline(folder: Path, token: str) -> Iterator[Baseline]:
    """One `simroute serve` on the host doing what one replica does, with the token in
    its environment as the replicas have it (`serving` passes the environment on)."""
    os.environ["SIMROUTE_TOKEN"] = token
    with redis_like_the_stacks(folder) as redis_port, model_stub(stub_answer()) as stub:
        config = yaml.safe_load(CONFIG.read_text())
        config["store"]["url"] = f"redis://127.0.0.1:{redis_port}/0"
        config["world_model"]["url"] = stub.url
        config["http"].update(listen_host="127.0.0.1", port=free_port())
        config["mcpServers"]["time"]["command"] = sys.executable  # the same server, from the checkout's environment
        path = folder / "simroute.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        with serving(path, folder / "serve.log") as served:
            yield Baseline(served.base_url, token, path)


@dataclass
class Stack:
    compose: ComposeStack
    replicas: int = 0  # as last scaled

    @property
    def url(self) -> str:
        return self.compose.url

    @property
    def token(self) -> str:
        return self.compose.token

    @property
    def name(self) -> str:
        return f"stack x{self.replicas}"

    def scale(self, replicas: int) -> None:
        """`up --scale router=N` (the first time: everything), then wait until exactly
        N replicas answer through the balancer."""
        self.compose.compose("up", "-d", "--no-build", "--scale", f"router={replicas}", timeout=300)
        self.replicas = replicas
        wait_for_replicas(self, replicas)

    def records(self, since: float) -> list[dict[str, Any]]:
        router = self.compose.container_ids("router")[0]
        command = ["docker", "exec", router, "simroute", "records", "--json", "--config", "/config/simroute.yaml"]
        return parse_rows(
            subprocess.run([*command, "--since", since_argument(since)], capture_output=True, text=True, timeout=300)
        )


def answering(url: str, token: str, probes: int) -> set[str]:
    """The replicas that answer /health through the balancer, each probe under a new
    agent session (balanced afresh)."""
    seen: set[str] = set()
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=5) as http:
        for _ in range(probes):
            try:
                response = http.get(f"{url}/health", headers={"X-Simroute-Session": uuid.uuid4().hex})
            except httpx.TransportError:
                continue
            if response.status_code == 200:
                seen.add(response.headers.get(REPLICA, "?"))
    return seen


def wait_for_replicas(stack: Stack, count: int, deadline_s: float = 240) -> None:
    """Until the balancer spreads new sessions over exactly `count` replicas, the same
    set twice in a row (a removed replica is marked down after its failed checks)."""
    deadline, last = time.monotonic() + deadline_s, set[str]()
    while True:
        seen = answering(stack.url, stack.token, probes=4 * count + 4)
        if len(seen) == count and seen == last:
            return
        assert time.monotonic() < deadline, (
            f"the balancer spreads over {sorted(seen)}, not {count} replica(s), after {deadline_s:g} s"
        )
        last = seen
        time.sleep(1.0)


@contextlib.contextmanager
def stack(token: str) -> Iterator[Stack]:
    """The stack built (images of its own tag), up, and at the end down with its
    volumes and image tags (nothing of it left in Docker)."""
    compose = ComposeStack(
        port=free_port(),
        proxy_port=free_port(),
        token=token,
        project=f"simroute-bench-{uuid.uuid4().hex[:10]}",
        files=(OVERRIDE,),
    )
    try:
        compose.build()
        yield Stack(compose)
    finally:
        compose.down()
        left = compose.leftovers()
        if any(left.values()):
            print(f"warning: left in Docker by {compose.project}: {left}")
