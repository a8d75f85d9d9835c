"""docker-compose.yml driven as a user drives it: built, brought up under a project
name of its own with free host ports, and taken down with its volumes."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[2]


def compose_command() -> list[str]:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return ["docker", "compose"]


def docker_answers() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@dataclass
class ComposeStack:
    """One project of docker-compose.yml; `port` and `proxy_port` are the balancer's.
    `files`: compose files laid over docker-compose.yml, in order (a second `-f` each:
    a test's or a benchmark's own config, world model or mounts)."""

    port: int
    proxy_port: int
    files: tuple[Path, ...] = ()
    token: str = field(default_factory=lambda: secrets.token_hex(24))
    project: str = field(default_factory=lambda: f"simroute-test-{uuid.uuid4().hex[:10]}")
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "SIMROUTE_TOKEN": self.token,
            "SIMROUTE_PORT": str(self.port),
            "SIMROUTE_PROXY_PORT": str(self.proxy_port),
            # Images of its own: a concurrent build elsewhere cannot retag what this project runs.
            "SIMROUTE_IMAGE_TAG": self.project,
            # For a file that mounts the Docker socket (deploy/compose.shell.yml does).
            "DOCKER_GID": str(os.stat("/var/run/docker.sock").st_gid) if os.path.exists("/var/run/docker.sock") else "",
        }

    def compose(self, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
        files = [part for path in (ROOT / "docker-compose.yml", *self.files) for part in ("-f", str(path))]
        command = [*compose_command(), *files, "-p", self.project, *args]
        started = time.monotonic()
        out = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=self.env(), cwd=ROOT)
        self.timings[args[0]] = self.timings.get(args[0], 0.0) + time.monotonic() - started
        assert out.returncode == 0, f"{' '.join(command)} failed:\n{out.stdout[-4000:]}\n{out.stderr[-4000:]}"
        return out

    def timed(self, phase: str, work: Callable[..., T], *args: Any) -> T:
        """`work(*args)`, its wall time kept under `phase` in `timings`."""
        started = time.monotonic()
        try:
            return work(*args)
        finally:
            self.timings[phase] = time.monotonic() - started

    def build(self) -> None:
        """The images' wheelhouse (scripts/stack-wheelhouse.sh; linked from the machine's
        cache once the set-up has fetched it), then every image of the file."""
        started = time.monotonic()
        out = subprocess.run(
            [str(ROOT / "scripts" / "stack-wheelhouse.sh")], capture_output=True, text=True, timeout=900, cwd=ROOT
        )
        assert out.returncode == 0, out.stderr
        self.timings["wheelhouse"] = time.monotonic() - started
        self.compose("build", timeout=1800)

    def up(self, routers: int) -> None:
        self.compose("up", "-d", "--scale", f"router={routers}", timeout=300)

    def down(self) -> None:
        self.compose("down", "-v", "--remove-orphans", "--timeout", "5", timeout=180)
        # Its image tags, not their parents: those are the build cache of the next run.
        listing = [
            "docker",
            "images",
            "--filter",
            f"reference=*:{self.project}",
            "--format",
            "{{.Repository}}:{{.Tag}}",
        ]
        tags = subprocess.run(listing, capture_output=True, text=True, timeout=30, check=True).stdout.split()
        if tags:
            subprocess.run(
                ["docker", "rmi", "--no-prune", *tags], capture_output=True, text=True, timeout=120, check=True
            )

    def container_ids(self, service: str | None = None) -> list[str]:
        filters = [f"label=com.docker.compose.project={self.project}"]
        if service:
            filters.append(f"label=com.docker.compose.service={service}")
        return _docker_ids(["ps", "-a"], filters)

    def logs(self, service: str) -> str:
        return self.compose("logs", "--no-color", service, timeout=60).stdout

    def leftovers(self) -> dict[str, list[str]]:
        """What of this project is left in Docker: containers, networks, volumes, its images."""
        project = [f"label=com.docker.compose.project={self.project}"]
        return {
            "containers": self.container_ids(),
            "networks": _docker_ids(["network", "ls"], project),
            "volumes": _docker_ids(["volume", "ls"], project),
            "images": _docker_ids(["images"], [f"reference=*:{self.project}"]),
        }


def _docker_ids(listing: list[str], filters: list[str]) -> list[str]:
    command = ["docker", *listing, "-q", *(part for f in filters for part in ("--filter", f))]
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=True).stdout.split()
