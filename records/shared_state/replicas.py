"""Which router replicas are alive, and which replica holds a session's real stateful
backend (its shell sandbox, its browser, a stateful upstream's MCP session).

`ReplicaLeases` and `BackendClaims` are the protocols. One router (the embedded
store) has no other replica: `LocalReplicaLeases` keeps no lease (owners are judged
by /proc for this host, another host's never), `LocalBackendClaims` gives every
claim to the replica asking. With a Redis store (replicas_redis.py) each replica
renews a lease and claims a session's backends where every replica sees them. Which
one a router has is decided where the store is opened (`SharedState.replicas`,
deployment.py); what a replica does with them is router/runtime/replica.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from records.owners import owner_judge

# (the records judge, the containers judge): whether an owner identity is alive.
Judges = tuple[Callable[[str], bool], Callable[[str], bool]]


class ReplicaLeases(Protocol):
    # False: no lease to keep (one router): nothing renews it, nothing is reaped in the background.
    renews: bool
    lease_s: float

    async def renew(self, replica: str) -> None: ...

    async def judges(self, replica: str, *, containers: bool) -> Judges:
        """(the records judge, the containers judge) from one read of the leases, for
        `replica` (alive, whatever its lease says). The containers judge is stricter:
        another host's owner counts dead only if it held a lease in this store."""

    async def drop(self, replica: str) -> None:
        """A replica stopping cleanly gives its lease up at once."""


class BackendClaims(Protocol):
    async def claim(self, session_id: str, kind: str, replica: str) -> str:
        """Claim `kind` of the session for `replica`; the replica that holds it."""

    async def release(self, session_id: str, kind: str, replica: str) -> None: ...


class LocalReplicaLeases:
    """One router: no leases, so a process of this host is judged by /proc and
    another host's is never judged (it counts alive)."""

    renews = False

    def __init__(self, *, lease_s: float) -> None:
        self.lease_s = lease_s

    async def renew(self, replica: str) -> None:
        return None

    async def judges(self, replica: str, *, containers: bool) -> Judges:
        return owner_judge(None), owner_judge(None)

    async def drop(self, replica: str) -> None:
        return None


class LocalBackendClaims:
    """One router: every session's backends are this router's."""

    async def claim(self, session_id: str, kind: str, replica: str) -> str:
        return replica

    async def release(self, session_id: str, kind: str, replica: str) -> None:
        return None
