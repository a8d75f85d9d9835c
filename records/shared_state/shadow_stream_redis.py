"""The shadow stream in Redis (`<prefix>:shadow`), consumed by the `shadow-workers`
group (the protocol: shadow_stream.py). Through the store's public `key` and `run`:
a command that fails (Redis away, a group lost with Redis's data) raises `StoreError`
with Redis's message (`NOGROUP` for a lost group)."""

from __future__ import annotations

from typing import Any

from redis.exceptions import ResponseError

from records.shared_state.shadow_stream import Job
from records.store.redis.base import RedisBase

GROUP = "shadow-workers"


class RedisShadowStream:
    def __init__(self, store: RedisBase) -> None:
        self.store = store

    @property
    def stream(self) -> str:
        return self.store.key("shadow")

    async def length(self) -> int:
        return int(await self.store.run("measuring the shadow queue", lambda r: r.xlen(self.stream)))

    async def add(self, record_id: str) -> None:
        await self.store.run("queueing shadow work", lambda r: r.xadd(self.stream, {"id": record_id}))

    async def jobs(self) -> list[Job]:
        entries = await self.store.run("reading the shadow queue", lambda r: r.xrange(self.stream))
        return _jobs(entries)

    async def records(self, record_ids: list[str]) -> list[dict[str, Any]]:
        return await self.store.bodies(record_ids)

    async def remove(self, job_ids: list[str]) -> None:
        async def work(r: Any) -> None:
            try:  # a worker may hold some of them: acknowledged, it will not retry them
                await r.xack(self.stream, GROUP, *job_ids)
            except ResponseError as exc:  # no worker ever started: no group to acknowledge in
                if "NOGROUP" not in str(exc):
                    raise
            await r.xdel(self.stream, *job_ids)

        await self.store.run("removing finished shadow jobs", work)

    async def create_group(self) -> None:
        async def work(r: Any) -> None:
            try:
                await r.xgroup_create(self.stream, GROUP, id="0", mkstream=True)
            except ResponseError as exc:  # the group exists already
                if "BUSYGROUP" not in str(exc):
                    raise

        await self.store.run("creating the worker group", work)

    async def claim_stale(self, consumer: str, *, idle_s: float, count: int = 10) -> list[Job]:
        claimed = await self.store.run(
            "claiming stale shadow jobs",
            lambda r: r.xautoclaim(
                self.stream, GROUP, consumer, min_idle_time=int(idle_s * 1000), start_id="0-0", count=count
            ),
        )
        return _jobs(claimed[1]) if claimed else []

    async def read_held(self, consumer: str, *, count: int = 10) -> list[Job]:
        held = await self.store.run(
            "rereading held shadow jobs", lambda r: r.xreadgroup(GROUP, consumer, {self.stream: "0"}, count=count)
        )
        return _jobs(entry for _, entries in (held or []) for entry in entries)

    async def read_new(self, consumer: str, *, block_ms: int, count: int = 1) -> list[Job]:
        read = await self.store.run(
            "reading shadow jobs",
            lambda r: r.xreadgroup(GROUP, consumer, {self.stream: ">"}, count=count, block=block_ms),
        )
        return _jobs(entry for _, entries in (read or []) for entry in entries)

    async def done(self, job_id: str) -> None:
        await self.store.run("acknowledging a shadow job", lambda r: r.xack(self.stream, GROUP, job_id))
        await self.store.run("removing a shadow job", lambda r: r.xdel(self.stream, job_id))


def _jobs(entries: Any) -> list[Job]:
    """(job id, record id) of stream entries (a held job deleted meanwhile reads back without fields)."""
    return [(job_id, (fields or {}).get("id", "")) for job_id, fields in entries]
