"""A replica does not reap right after Redis was away: no replica could renew its lease
meanwhile, so a lease that ran out says nothing until the others had a whole lease to
renew it (else a live replica's sandboxes and calls would be taken for a dead one's)."""

from __future__ import annotations

import asyncio

from records.store.protocol import StoreError
from router.runtime.replica import ReplicaPresence


class Leases:
    """Redis away for the first `down` renewals; every other replica's lease ran out."""

    def __init__(self, down: int, lease_s: float) -> None:
        self.lease_s, self.down, self.renewals = lease_s, down, 0

    async def renew(self, replica: str) -> None:
        self.renewals += 1
        if self.renewals <= self.down:
            raise StoreError("renewing this replica's lease failed on Redis: connection refused")

    async def live(self) -> frozenset[str]:
        return frozenset()

    async def known(self) -> frozenset[str]:
        return frozenset({"other-host:1:1"})


async def reaps_during(presence: ReplicaPresence, seconds: float) -> list[float]:
    reaped: list[float] = []

    async def reap() -> tuple[int, list[str]]:
        reaped.append(asyncio.get_running_loop().time())
        return 0, []

    presence.reap = reap  # type: ignore[method-assign]
    task = asyncio.create_task(presence._renew_forever())
    await asyncio.sleep(seconds)
    task.cancel()
    return reaped


async def test_no_reaping_until_a_whole_lease_has_passed_since_redis_came_back():
    lease_s = 0.3  # renewed every 0.1 s, reaping every third renewal
    away = ReplicaPresence(Leases(down=2, lease_s=lease_s), None, identity="this-host:1:1")  # type: ignore[arg-type]
    started = asyncio.get_running_loop().time()
    reaped = await reaps_during(away, 2.0)
    last_failure = started + 2 * lease_s / 3  # renewals 1 and 2 failed; the third (a reaping one) succeeded
    assert reaped and min(reaped) >= last_failure + lease_s, (reaped, last_failure)

    steady = ReplicaPresence(Leases(down=0, lease_s=lease_s), None, identity="this-host:1:1")  # type: ignore[arg-type]
    assert await reaps_during(steady, 1.0)  # with Redis there all along: reaped at the third renewal
