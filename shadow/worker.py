"""Shadow work at scale: routers put jobs on a stream (Redis's, kept by the shared
state: records/shared_state/shadow_stream.py), `simroute worker` processes consume
them in a consumer group.

A job names a `pending` record; the worker rebuilds the session's history from
the store (as the agent saw it), simulates, compares and completes the record,
then acknowledges and deletes the job (so the stream's length is the queue's).
A job a crashed worker held longer than `claim_after_s` is claimed by another.
While the world model is down, a job stays unacknowledged (its record pending) and
the worker reads its own held jobs again every `retry_s`, so shadow work waits for
the model and completes once it is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time

from calls import Session, SimulatorUnavailable, Turn
from records.record import Record
from records.shared_state.shadow_stream import ShadowStream
from records.store.protocol import RecordStore, StoreError
from shadow.runner import DrainReport, ShadowRunner, shadow_session_id

log = logging.getLogger("simroute.worker")

_HISTORY = 256


class StreamShadowQueue:
    """The engine's side: shadow jobs go to the stream, bounded by `queue_size`."""

    def __init__(self, stream: ShadowStream, *, queue_size: int, drain_runner: ShadowRunner) -> None:
        self.stream = stream
        self.queue_size = queue_size
        self.skipped = 0
        self._drain_runner = drain_runner  # `simroute drain` still completes pending records here

    async def has_room(self) -> bool:
        try:
            return await self.stream.length() < self.queue_size
        except StoreError:
            return False  # Redis away: no shadow work is queued (the call itself is spooled)

    async def submit(self, record: Record, history: list[Turn]) -> None:
        # The record is already stored `pending`: a worker rebuilds the history from it.
        try:
            await self.stream.add(record.id)
        except StoreError as exc:  # stays pending: drain completes it
            log.error("shadow job for %s not queued: %s", record.id, exc)

    async def drain(self) -> DrainReport:
        """Complete every pending record (a one-shot worker), then take the jobs of
        records no longer pending off the stream: left there, they would count against
        `queue_size` and be read again by the next worker."""
        report = await self._drain_runner.drain()
        await self._forget_finished_jobs()
        return report

    async def _forget_finished_jobs(self) -> None:
        jobs = await self.stream.jobs()
        rows = await self.stream.records([record_id for _, record_id in jobs if record_id])
        still_pending = {row.get("id") for row in rows if row.get("status") == "pending"}
        finished = [job_id for job_id, record_id in jobs if record_id not in still_pending]
        if finished:
            await self.stream.remove(finished)

    async def aclose(self, grace_s: float = 2.0) -> None:
        await self._drain_runner.aclose(grace_s)


class ShadowWorker:
    """One consumer of the shadow stream (see module doc)."""

    def __init__(
        self,
        stream: ShadowStream,
        store: RecordStore,
        runner: ShadowRunner,
        *,
        claim_after_s: float = 60.0,
        retry_s: float = 5.0,
        name: str | None = None,
    ) -> None:
        self.stream = stream
        self.store = store
        self.runner = runner
        self.claim_after_s = claim_after_s
        self.retry_s = retry_s
        self.name = name or f"{socket.gethostname()}-{os.getpid()}"
        self.completed = 0
        # When the jobs this worker holds for a model that was down are read again (None: none held).
        self._retry_at: float | None = None
        self._waiting = False  # the model was down at the last try: said once, not per job

    async def start(self) -> ShadowWorker:
        await self.stream.create_group()
        return self

    async def run_forever(self, *, block_ms: int = 1000) -> None:
        """Steps until cancelled. Redis away is waited out, tried every `retry_s` (the
        jobs wait in the stream); a group lost with Redis's data is made again."""
        away = False
        while True:
            try:
                await self.step(block_ms=block_ms)
            except StoreError as exc:
                if not away:
                    log.warning("the shadow worker waits for Redis (tried every %.0fs): %s", self.retry_s, exc)
                away = True
                await asyncio.sleep(self.retry_s)
                if "NOGROUP" in str(exc):
                    with contextlib.suppress(StoreError):
                        await self.start()
                continue
            if away:
                log.info("Redis answers again: the shadow worker goes on")
                away = False

    async def step(self, *, block_ms: int = 1000) -> int:
        """Claim stale jobs, read new ones, process them; returns how many were done."""
        jobs = await self.stream.claim_stale(self.name, idle_s=self.claim_after_s)
        if not jobs and self._retry_at is not None and time.monotonic() >= self._retry_at:
            self._retry_at = None
            jobs = await self.stream.read_held(self.name)
        if not jobs:
            jobs = await self.stream.read_new(self.name, block_ms=block_ms)
        for job_id, record_id in jobs:
            await self._process(job_id, record_id)
        return len(jobs)

    async def _process(self, job_id: str, record_id: str) -> None:
        rows = await self.stream.records([record_id] if record_id else [])
        if rows and rows[0].get("status") == "pending":
            record = Record.from_json(rows[0])
            earlier = await self.store.session_records(record.call.session_id, before_step=record.step, limit=_HISTORY)
            session = Session(
                id=shadow_session_id(record),
                history=[Turn(r.call, r.served, perturbed=r.perturbation is not None) for r in earlier],
            )
            try:
                await self.runner.complete(record, session)
            except SimulatorUnavailable as exc:  # held, unacknowledged: read again in retry_s
                if not self._waiting:
                    log.warning(
                        "shadow work waits for the world model (jobs held, retried every %.0fs): %s", self.retry_s, exc
                    )
                self._waiting = True
                self._retry_at = time.monotonic() + self.retry_s
                return
            if self._waiting:
                log.info("the world model answers again: held shadow work goes on")
                self._waiting = False
            self.completed += 1
        # Done, or nothing left to do (completed elsewhere, or gone): the job leaves the queue.
        await self.stream.done(job_id)
