"""The local Docker engine, reached on first need (the shell sandboxes and the
contained browser both run there), and what its client raises.

docker-py raises `docker.errors.DockerException` (its API errors, a missing
image) and lets `requests` errors through when the engine cannot be reached or
does not answer in time (`ping`, `exec_run` on a gone engine): `ENGINE_ERRORS`
is both, for callers that translate an engine failure into the backend's own
error or report it.
"""

from __future__ import annotations

import os
from typing import Any

from docker.errors import DockerException, ImageNotFound, NotFound
from requests.exceptions import RequestException

from backends.errors import BackendUnavailable

# What any docker-py call may raise when the engine refuses or cannot be reached.
ENGINE_ERRORS: tuple[type[Exception], ...] = (DockerException, RequestException)


def docker_client(*, fallback: str = "route those calls to sim") -> Any:
    """A docker-py client that has answered a ping. Raises BackendUnavailable naming
    where it looked and what the user can do (`fallback` names the way around it)."""
    import docker

    address = os.environ.get("DOCKER_HOST") or "the default socket (unix:///var/run/docker.sock or the CLI context)"
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except ENGINE_ERRORS as exc:
        raise BackendUnavailable(
            f"no Docker engine answers at {address} ({exc}); install and start Docker, set DOCKER_HOST, or {fallback}"
        ) from exc
    return client


def require_image(client: Any, image: str, *, what: str, setting: str) -> None:
    """Raise BackendUnavailable unless `image` is built on the engine (`what`: the
    image's role, e.g. "sandbox"; `setting`: the option that names it)."""
    try:
        client.images.get(image)
    except ImageNotFound as exc:
        raise BackendUnavailable(
            f"the {what} image {image!r} is not built on this Docker engine: "
            f"run scripts/build-images.sh (or set {setting})"
        ) from exc
    except ENGINE_ERRORS as exc:
        raise BackendUnavailable(f"the Docker engine failed: {exc}") from exc


def is_gone(exc: BaseException) -> bool:
    """Whether a removal failed only because the container is already gone (404)
    or already being removed by the engine (409: auto-remove won the race)."""
    if isinstance(exc, NotFound):
        return True
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return status in (404, 409)
