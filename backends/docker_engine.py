"""The local Docker engine, reached on first need (the shell sandboxes and the
contained browser both run there)."""

from __future__ import annotations

import os
from typing import Any

from backends.errors import BackendUnavailable


def docker_client(*, fallback: str = "route those calls to sim") -> Any:
    """A docker-py client that has answered a ping. Raises BackendUnavailable naming
    where it looked and what the user can do (`fallback` names the way around it)."""
    try:
        import docker
        from docker.errors import DockerException
    except ImportError as exc:  # pragma: no cover - a dependency of simroute
        raise BackendUnavailable("the docker Python package is missing: reinstall simroute") from exc
    address = os.environ.get("DOCKER_HOST") or "the default socket (unix:///var/run/docker.sock or the CLI context)"
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except DockerException as exc:
        raise BackendUnavailable(f"no Docker engine answers at {address} ({exc}); install and start Docker, set DOCKER_HOST, or {fallback}") from exc
    return client
