"""`OwnedContainers`: the sandbox containers this process started, tied to its life.

A sandbox is created with its stdin open, attached by this process before it
starts, and its command reads that stdin until end of file. The engine closes
the container's stdin when the attach connection (the lifeline) closes, and
that happens however this process ends: a clean stop cuts every lifeline at
once, and a crash, SIGTERM or SIGKILL closes them with the process's sockets.
The container's command then exits and the engine removes it (auto-remove), in
well under a second and in parallel. So no sandbox outlives its router, with
no cooperation needed from a dying process.

Blocking code (docker-py): callers run it in a worker thread. The only window
left is a process killed between `create` and the attach (no process runs in
such a container); the reaper at the next start removes it.
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import Any

from backends.docker_engine import ENGINE_ERRORS, is_gone
from backends.errors import BackendUnavailable
from backends.shell.bash_stream import close_exec_socket

log = logging.getLogger("simroute.shell")


class SandboxesClosed(BackendUnavailable):
    """The router is stopping: no new sandbox starts. Raised by `OwnedContainers`;
    the warm pool stops filling, a session's first command reports it."""


class OwnedContainers:
    def __init__(self, client: Any) -> None:
        self.client = client
        self._lock = threading.Lock()
        self._lifelines: dict[str, Any] = {}  # container id -> the attach socket holding its stdin
        self._containers: dict[str, Any] = {}
        self._closed = False

    def start(self, options: dict[str, Any]) -> Any:
        """Create, attach the lifeline, start. Refused once `close_all` ran; a
        container created while it ran is removed here, never left behind.
        Raises BackendUnavailable when the engine refuses (docker-py's error is
        the cause), SandboxesClosed when the router is stopping."""
        self._refuse_if_closed()
        try:
            container = self.client.containers.create(**options)
        except ENGINE_ERRORS as exc:
            raise BackendUnavailable(f"the Docker engine did not create a sandbox: {exc}") from exc
        lifeline = None
        try:
            lifeline = self.client.api.attach_socket(container.id, params={"stdin": 1, "stream": 1})
            with self._lock:
                if not self._closed:
                    self._lifelines[container.id] = lifeline
                    self._containers[container.id] = container
            self._refuse_if_closed()
            container.start()
        except ENGINE_ERRORS as exc:
            self._release_quietly(container, lifeline)
            raise BackendUnavailable(f"the Docker engine did not start sandbox {container.name}: {exc}") from exc
        except BaseException:
            self._release_quietly(container, lifeline)
            raise
        return container

    def _release_quietly(self, container: Any, lifeline: Any) -> None:
        """A cleanup path: removing a sandbox that failed to start must not mask why
        it failed; a removal that fails too is logged (the reaper gets it later)."""
        try:
            self.release(container, lifeline)
        except ENGINE_ERRORS as exc:
            log.warning("removing sandbox %s after it failed to start: %s", container.name, exc)

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise SandboxesClosed("simroute is stopping: no new sandbox is started")

    def release(self, container: Any, lifeline: Any = None) -> None:
        """Remove one sandbox: cut its lifeline (the engine removes it), then
        remove it outright so it is gone when this returns."""
        with self._lock:
            lifeline = self._lifelines.pop(container.id, lifeline)
            self._containers.pop(container.id, None)
        if lifeline is not None:
            _cut(lifeline)
        remove_container(container)

    def close_all(self) -> list[Any]:
        """Refuse new sandboxes and cut every lifeline now (no waiting: the engine
        removes the containers in parallel). Returns the containers, for a
        caller that wants to wait until they are gone (`remove_container` each)."""
        with self._lock:
            self._closed = True
            lifelines, self._lifelines = list(self._lifelines.values()), {}
            containers, self._containers = list(self._containers.values()), {}
        for lifeline in lifelines:
            _cut(lifeline)
        return containers


def _cut(lifeline: Any) -> None:
    # shutdown() ends the connection even while other references to the socket
    # exist (docker-py's response object keeps one); close() alone would not.
    raw = getattr(lifeline, "_sock", lifeline)
    try:
        raw.shutdown(socket.SHUT_RDWR)
    except (OSError, AttributeError):  # already closed, or not a socket (closing below suffices)
        pass
    close_exec_socket(lifeline)


def remove_container(container: Any) -> None:
    """Force-remove; a container already gone (or being removed by the engine) is
    fine. Any other engine failure is raised (docker-py's or requests' own type:
    the callers report it with the container's name)."""
    try:
        container.remove(force=True)
    except ENGINE_ERRORS as exc:
        if not is_gone(exc):
            raise
