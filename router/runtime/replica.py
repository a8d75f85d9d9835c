"""This router as one replica of several on a Redis store: its lease, the reaping of
what dead replicas left, and the claims on sessions' real stateful backends.

- The lease (`records/shared_state/replicas_redis.py`; one router keeps none:
  replicas.py) is renewed every third of
  `sessions.replica_lease_s` by a named background task. A replica killed on any host
  stops renewing; once its lease ran out, a live replica marks the calls it left
  `started` interrupted and removes the sandbox and browser containers it left on a
  Docker engine they share. Without Redis there are no leases: a process of this host
  is judged by /proc, another host's is never judged.
- A backend claim names the replica holding a session's real sandbox (or browser). A
  session served by another replica — its own died, or a balancer moved it — gets a
  clear error naming the lost backend (`BackendLost`), never a fresh sandbox.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from backends.errors import BackendLost
from records.owners import owner_judge, this_process_owner
from records.shared_state.replicas import BackendClaims, ReplicaLeases
from records.store.protocol import StoreError

if TYPE_CHECKING:
    from backends.browser.pool import BrowserPool
    from backends.mcp.upstream import UpstreamPool
    from backends.shell.sandboxes import Sandboxes
    from records.shared_state.deployment import SharedState
    from router.config import Config

log = logging.getLogger("simroute.replica")

# Reaping reads every started record: not at every renewal.
REAP_EVERY_RENEWALS = 3


class ReplicaPresence:
    def __init__(self, leases: ReplicaLeases, claims: BackendClaims, *, identity: str | None = None) -> None:
        self.leases = leases
        self.claims = claims
        self.identity = identity or this_process_owner()
        # What the reaper removes besides records: the Docker containers of dead owners
        # (given the owner judge; returns what it removed), set by the runtime.
        self.container_reapers: list[Callable[[Callable[[str], bool]], Awaitable[list[str]]]] = []
        self.interrupt: Callable[[Callable[[str], bool]], Awaitable[int]] | None = None
        self._task: asyncio.Task[None] | None = None
        # Dead replicas are reaped from then on (monotonic time; pushed back after Redis was away).
        self.judge_from = 0.0
        # Set when this router stops: a session's backends close with it, and their claims
        # are kept, so a replica the session moves to says they were lost (not fresh ones).
        self.stopping = False

    async def start(self) -> None:
        if not self.leases.renews or self._task is not None:
            return
        try:
            await self.leases.renew(self.identity)
        except StoreError as exc:
            log.warning("replica lease not renewed (Redis unreachable): %s", exc)
        self._task = asyncio.get_running_loop().create_task(self._renew_forever(), name="simroute-replica-lease")

    async def judge(self) -> Callable[[str], bool]:
        """Whether an owner identity is alive: /proc for this host, leases for others
        (when Redis cannot say, another host's owner counts alive: nothing is reaped)."""
        return (await self._judges(containers=False))[0]

    async def _judges(self, *, containers: bool) -> tuple[Callable[[str], bool], Callable[[str], bool]]:
        """(the records judge, the containers judge) from one read of the leases. The
        containers judge is stricter: another host's owner counts dead only if it held a
        lease in this store — the Docker engine may be shared with another deployment."""
        try:
            return await self.leases.judges(self.identity, containers=containers)
        except StoreError as exc:
            log.warning("replica leases unreadable, other hosts' owners count alive: %s", exc)
            return owner_judge(None), owner_judge(None)

    async def reap(self) -> tuple[int, list[str]]:
        """(records marked interrupted, containers removed) of dead replicas."""
        is_alive, owns = await self._judges(containers=bool(self.container_reapers))
        interrupted = await self.interrupt(is_alive) if self.interrupt is not None else 0
        removed: list[str] = []
        for reaper in self.container_reapers:
            removed += await reaper(owns)
        if interrupted:
            log.warning(
                "%d call(s) started by a router that stopped before they finished are marked interrupted", interrupted
            )
        if removed:
            log.info("removed %d container(s) left by a stopped router: %s", len(removed), ", ".join(removed))
        return interrupted, removed

    async def _renew_forever(self) -> None:
        interval = self.leases.lease_s / 3
        renewals = 0
        while True:
            await asyncio.sleep(interval)
            renewals += 1
            try:
                await self.leases.renew(self.identity)
                if renewals % REAP_EVERY_RENEWALS == 0 and time.monotonic() >= self.judge_from:
                    await self.reap()
            except StoreError as exc:
                # While Redis is away no replica renews: a lease that ran out meanwhile says
                # nothing until every live replica had a whole lease to renew it again.
                self.judge_from = time.monotonic() + self.leases.lease_s + interval
                log.warning("replica lease: %s", exc)
            except Exception:  # the task's boundary: one failed reaping must not stop the renewals
                log.exception("reaping what stopped replicas left failed")

    # --- backend claims ---------------------------------------------------------------

    async def claim(self, session_id: str, kind: str, what: str) -> None:
        """Before a real `kind` backend (shell, browser) is opened for a session here.
        Raises BackendLost when another replica holds the session's; Redis unreachable:
        the claim is skipped (the backend opens, as with one replica)."""
        try:
            holder = await self.claims.claim(session_id, kind, self.identity)
        except StoreError as exc:
            log.warning("session %s: %s not claimed: %s", session_id[:8], what, exc)
            return
        if holder == self.identity:
            return
        alive = (await self.judge())(holder)
        if alive:
            raise BackendLost(
                f"this session's {what} lives on replica {holder}, and this call reached replica {self.identity}: "
                "send the session's calls to the replica that holds it (a sticky load balancer), or start a new session"
            )
        raise BackendLost(
            f"this session's {what} was lost with replica {holder}, which stopped "
            "(no fresh one is started in its place: what the session's earlier commands did is gone); "
            "start a new session or episode"
        )

    async def release(self, session_id: str, kind: str) -> None:
        if self.stopping:
            return
        try:
            await self.claims.release(session_id, kind, self.identity)
        except StoreError as exc:
            log.warning("session %s: %s claim not released: %s", session_id[:8], kind, exc)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        try:
            await self.leases.drop(self.identity)
        except StoreError as exc:
            log.warning("replica lease not given up: %s", exc)


def replica_presence(
    config: Config,
    shared: SharedState,
    shell: Sandboxes | None,
    browser: BrowserPool | None = None,
    upstreams: UpstreamPool | None = None,
) -> ReplicaPresence:
    """Leases and claims in the Redis store; one router's (the embedded store) are trivially held."""
    sessions = config.sessions
    presence = ReplicaPresence(*shared.replicas(lease_s=sessions.replica_lease_s, claims_ttl_s=2 * sessions.idle_ttl_s))
    if shell is not None:
        shell.before_open = lambda session_id: presence.claim(session_id, "shell", "shell sandbox")
        shell.after_close = lambda session_id: presence.release(session_id, "shell")
        presence.container_reapers.append(lambda is_alive: _reap_containers(shell, is_alive))
    if browser is not None:
        browser.before_open = lambda session_id: presence.claim(session_id, "browser", "browser (its pages and logins)")
        browser.after_close = lambda session_id: presence.release(session_id, "browser")
    if upstreams is not None:  # the servers marked `stateful` only
        upstreams.before_open = lambda session_id, server: presence.claim(
            session_id, f"mcp:{server}", f"upstream MCP session of {server!r}"
        )
        upstreams.after_close = lambda session_id, server: presence.release(session_id, f"mcp:{server}")
    return presence


async def _reap_containers(shell: Sandboxes, is_alive: Callable[[str], bool]) -> list[str]:
    """Sandbox and browser containers (one owner label) of dead routers, on the Docker
    engine the shell reached."""
    from backends.docker_engine import ENGINE_ERRORS
    from backends.shell.container import reap_orphans

    if shell.client is None:
        return []
    try:
        removed, failed = await asyncio.to_thread(reap_orphans, shell.client, is_alive)
    except ENGINE_ERRORS as exc:
        log.warning("listing containers left by stopped routers failed: %s", exc)
        return []
    for failure in failed:
        log.warning("could not remove a container left by a stopped router (%s)", failure)
    return removed
