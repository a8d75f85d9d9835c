"""`X-Simroute-Replica` on every HTTP answer: the host name of the process that served it.

In a container that is the container's own host name (Docker's default: its short
id), which `docker ps`, `docker logs` and `docker kill` accept as they are; on a
host, the machine's name. The balancer in front of replicas (deploy/balancer) keeps
its own slot name apart, in `X-Simroute-Balancer-Slot`, since a slot is not a
replica an operator can find: the two differ as soon as replicas are restarted or
scaled.
"""

from __future__ import annotations

import socket
from typing import Any

REPLICA_HEADER = b"x-simroute-replica"


class ReplicaHeader:
    """ASGI middleware: adds the header to each HTTP answer's start (once: an answer
    passed through the app again, as an episode's MCP URL is, is not named twice)."""

    def __init__(self, app: Any, *, name: str | None = None) -> None:
        self.app = app
        self.name = (name or socket.gethostname()).encode("latin-1", "replace")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def named(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or [])
                if not any(key.lower() == REPLICA_HEADER for key, _ in headers):
                    headers.append((REPLICA_HEADER, self.name))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, named)
