"""Where the real browser runs (`browser.isolation`), and the Docker side of the
contained browser: the engine, the image, leftovers.

- `host`: Chromium runs as the router's user, `--no-sandbox`.
- `container`: Chromium runs in a hardened container per router (container.py),
  started by Playwright through a launcher; a missing engine or image is an error
  of the real route (simulated calls still work).
- `auto` (default): `container` when a Docker engine answers and `browser.image`
  is built, else `host`, with a warning that names what is lost.

The container has no network; its only way out is a unix socket relayed to
simroute's proxy (proxy_socket.py), and DevTools runs over its stdin and stdout
(container.py). The socket is bind-mounted, so the engine must run on this
machine (a remote DOCKER_HOST cannot mount it).

Blocking code (docker-py): callers run it in a worker thread.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from typing import Any

from backends.browser.container import reap_workdirs
from backends.browser.options import BrowserConfig
from backends.docker_engine import ENGINE_ERRORS, docker_client, require_image
from backends.errors import BackendUnavailable
from backends.shell.container import OWNER_LABEL, reap_orphans
from records.owners import owner_is_alive

log = logging.getLogger("simroute.browser")

HOST_RISK = (
    "Chromium runs on the host as this user, with its own sandbox off: a page that escapes "
    "Chromium reaches this user's files, processes and network"
)


@dataclass(slots=True)
class ContainerEngine:
    """What container isolation needs, checked: the engine and the CLI that runs the container."""

    client: Any
    docker: str  # the docker CLI's path


def resolve(config: BrowserConfig) -> ContainerEngine | None:
    """The engine to contain the browser with, or None for host isolation.
    Raises BackendUnavailable when `container` is asked for and cannot be had."""
    if config.isolation == "host":
        return None
    try:
        engine = _container_engine(config)
    except BackendUnavailable as exc:
        if config.isolation == "container":
            raise
        log.warning("browser.isolation is auto and Chromium cannot be contained (%s): %s", exc, HOST_RISK)
        return None
    try:
        removed, failed = reap_orphans(engine.client)
    except ENGINE_ERRORS as exc:  # the listing failed: leftovers wait for a later start
        removed, failed = [], [f"listing containers failed: {exc}"]
    if removed:
        log.info("removed %d containers left by a stopped router: %s", len(removed), ", ".join(removed))
    for failure in failed:
        log.warning("could not remove a container left by a stopped router (%s)", failure)
    reap_workdirs(owner_is_alive)
    return engine


def _container_engine(config: BrowserConfig) -> ContainerEngine:
    docker = shutil.which("docker")
    if docker is None:
        raise BackendUnavailable("the docker command is not on PATH")
    client = docker_client(fallback="set browser.isolation: host")
    require_image(client, config.image, what="browser", setting="browser.image")
    return ContainerEngine(client, docker)


def remove_containers(client: Any, *, owner: str, name: str | None = None) -> list[str]:
    """Force-remove this owner's browser containers (one of them, by name); returns
    the names removed. A container already gone or going is fine."""
    from backends.browser.container import ROLE, ROLE_LABEL
    from backends.shell.owned import remove_container

    filters: dict[str, Any] = {"label": [f"{OWNER_LABEL}={owner}", f"{ROLE_LABEL}={ROLE}"]}
    if name is not None:
        filters["name"] = name
    removed = []
    for container in client.containers.list(all=True, filters=filters):
        if name is None or container.name == name:
            remove_container(container)
            removed.append(container.name)
    return removed
