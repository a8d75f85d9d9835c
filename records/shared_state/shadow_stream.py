"""The shadow stream: where router replicas put shadow work (a job names a `pending`
record) and `simroute worker` processes take it, in one consumer group. A job a
consumer held longer than a while is claimed by another; a job is acknowledged and
deleted once done, so the stream's length is the queue's.

`ShadowStream` is the storage side only (the work is shadow/worker.py's). One router
(the embedded store) has no stream: it does its shadow work itself. With a Redis
store the stream is `RedisShadowStream` (shadow_stream_redis.py). Which one a router
has is decided where the store is opened (`SharedState.shadow_work`, deployment.py).
"""

from __future__ import annotations

from typing import Any, Protocol

# A job on the stream: (its id in the stream, the id of the record it names; "" if gone).
Job = tuple[str, str]


class ShadowStream(Protocol):
    async def length(self) -> int:
        """The jobs on the stream (held by a consumer or not)."""

    async def add(self, record_id: str) -> None: ...

    async def jobs(self) -> list[Job]:
        """Every job on the stream, oldest first."""

    async def records(self, record_ids: list[str]) -> list[dict[str, Any]]:
        """The stored records jobs name (as JSON objects), those still kept, in one read
        of the store the stream lives beside."""

    async def remove(self, job_ids: list[str]) -> None:
        """Take jobs off the stream (acknowledged for any consumer holding them)."""

    async def create_group(self) -> None:
        """The consumers' group (and the stream), unless it exists."""

    async def claim_stale(self, consumer: str, *, idle_s: float, count: int = 10) -> list[Job]:
        """Jobs another consumer held longer than `idle_s`, now `consumer`'s."""

    async def read_held(self, consumer: str, *, count: int = 10) -> list[Job]:
        """Jobs `consumer` holds and has not acknowledged (read again)."""

    async def read_new(self, consumer: str, *, block_ms: int, count: int = 1) -> list[Job]:
        """New jobs for `consumer`, waiting up to `block_ms` for one."""

    async def done(self, job_id: str) -> None:
        """A job done (or with nothing left to do): acknowledged and deleted."""
