"""Shadowing: the simulated side of a call runs off the agent's path.

The record is written as `pending` before the agent sees the real result, so
shadow work interrupted by a stop is never lost: the next start (or
`simroute drain`) rebuilds the session's history from the records and
completes it. Comparison runs in a worker thread: a large pair never stalls
the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from opentelemetry import context as otel_context
from opentelemetry import trace

from calls import Call, Session, Simulator, SimulatorUnavailable, Turn, tool_key
from records.record import Record
from records.redaction import Redactor
from records.store.noise_counts import NoiseRule
from records.store.protocol import RecordError, RecordStore, StoreError
from records.store.record_log import RecordLog
from shadow.compare.divergence import compare, text_size
from shadow.compare.noise import NoiseStore, noise_for_tool
from shadow.shadow_span import shadow_span

log = logging.getLogger("simroute.shadow")

DEFAULT_NOISE_RULE = NoiseRule()  # frozen: one shared default

# History turns read back for a drained record's simulation.
_DRAIN_HISTORY = 256
# Pairs up to this many characters of text are compared on the event loop.
INLINE_COMPARE_CHARS = 1024


def shadow_session_id(record: Record) -> str:
    # Its own engine session: shadow work never holds the model context (and the
    # cached prefix) of the agent's own simulated calls.
    return f"{record.call.session_id}#shadow"


class ShadowQueue(Protocol):
    """Where the engine hands shadow work: run here (`ShadowRunner`) or by workers
    elsewhere (`StreamShadowQueue`, shadow/worker.py, consumed by `simroute worker`)."""

    skipped: int

    async def has_room(self) -> bool: ...

    async def submit(self, record: Record, history: list[Turn]) -> None: ...

    async def drain(self) -> DrainReport: ...

    async def aclose(self, grace_s: float = 2.0) -> None: ...


@dataclass(slots=True)
class DrainReport:
    completed: int = 0
    failed: list[str] = field(default_factory=list)  # "record id: why"


class ShadowRunner:
    """Runs shadow work off the agent's path: a bounded queue served by
    `concurrency` workers. A session's shadow work runs in order (its history as
    the agent saw it); when the queue is full, the caller skips the work (see
    `has_room`) and says so in the record."""

    def __init__(
        self,
        *,
        simulator: Simulator,
        store: RecordStore,
        records: RecordLog,
        deadline_for: Callable[[Call], float],
        queue_size: int = 256,
        concurrency: int = 1,
        noise: NoiseStore | None = None,
        noise_rule: NoiseRule = DEFAULT_NOISE_RULE,
    ) -> None:
        self.simulator = simulator
        self.store = store
        self.records = records
        self.deadline_for = deadline_for
        self.queue_size = queue_size
        self.concurrency = concurrency
        self.skipped = 0  # shadow work not done because the queue was full (metrics, tests)
        self._queue: asyncio.Queue[tuple[Record, Session, otel_context.Context | None]] = asyncio.Queue(
            maxsize=queue_size
        )
        # session id -> [its lock, work items holding or awaiting it]
        self._session_locks: dict[str, list] = {}
        self._workers: list[asyncio.Task[None]] = []
        self._busy = 0
        self.redactor: Redactor | None = None  # set once the key is loaded (the runtime's start)
        self.noise = noise  # learned noise counts; without them, the built-in detectors only
        self.noise_rule = noise_rule
        # With tokens, set by the runtime: the noise table's namespaces a session may use
        # (its own and the shared ones), as key prefixes.
        self.noise_scopes: Callable[[str], Sequence[str]] = lambda session_id: ("",)
        # Set by the runtime when tracing is on: each submitted call's shadow work is a
        # span, a child of the call's (shadow/shadow_span.py). None: no span, no context kept.
        self.tracer: trace.Tracer | None = None

    @property
    def in_flight(self) -> int:
        return self._queue.qsize() + self._busy

    async def has_room(self) -> bool:
        return not self._queue.full()

    async def submit(self, record: Record, history: list[Turn]) -> None:
        """Simulate `record`'s call given the history before it; update the record when
        done. Ask `has_room()` first: a full queue raises asyncio.QueueFull."""
        # `history` is the caller's copy already (taken when the call completed): not copied again.
        # The call's span, current in `Engine.complete`.
        parent = otel_context.get_current() if self.tracer is not None else None
        self._queue.put_nowait((record, Session(id=shadow_session_id(record), history=history), parent))
        if not self._workers:
            loop = asyncio.get_running_loop()
            self._workers = [
                loop.create_task(self._work(), name=f"simroute-shadow-{n}") for n in range(self.concurrency)
            ]

    async def _work(self) -> None:
        while True:
            record, session, parent = await self._queue.get()
            # Taken in queue order with no await in between: a session's work stays in order.
            entry = self._session_locks.setdefault(record.call.session_id, [asyncio.Lock(), 0])
            entry[1] += 1
            self._busy += 1
            try:
                async with entry[0]:
                    with shadow_span(self.tracer, parent, record):
                        await self.complete(record, session)
            except SimulatorUnavailable as exc:  # the model is down: pending, drain completes it once it is back
                log.warning(
                    "shadow work of %s waits for the world model (the record stays pending): %s", record.id, exc
                )
            # Boundary: shadow work runs after the agent was answered. Its failure is
            # logged and the record stays pending for drain; it never stops the worker.
            except Exception:
                log.exception("shadow work of %s failed; the record stays pending for drain", record.id)
            finally:
                self._busy -= 1
                self._queue.task_done()
                entry[1] -= 1
                if entry[1] == 0:
                    self._session_locks.pop(record.call.session_id, None)

    async def complete(self, record: Record, session: Session) -> None:
        """Simulate (unless the record's shadow side is known already), compare and store
        the record complete. Raises `SimulatorUnavailable`
        when the world model is down: the record stays pending (a model that is away is
        not a divergence), and the caller tries again later."""
        # Known when the call was answered (from the session's world state): compared as
        # it is.
        simulated = record.shadow
        if simulated is None:
            simulated = await self.simulator.simulate(
                record.call, session, deadline_s=self.deadline_for(record.call), background=True
            )
        if self.redactor is not None:  # the real side was redacted when recorded: compare like with like
            simulated = self.redactor.observation(simulated)
        record.shadow = simulated
        call = record.call
        scopes = self.noise_scopes(call.session_id)
        noise = await noise_for_tool(
            self.noise, tool_key(call.channel, call.server, call.tool), rule=self.noise_rule, scopes=scopes
        )
        if max(text_size(record.served), text_size(simulated)) <= INLINE_COMPARE_CHARS:
            # A small pair compares in well under 0.1 ms: cheaper on the loop than the
            # hop to a thread and the fight for the GIL that an agent's call would wait out.
            result = compare(record.served, simulated, channel=call.channel, noise=noise)
        else:  # off the event loop: a large pair takes milliseconds the agent's calls should not wait for
            result = await asyncio.to_thread(compare, record.served, simulated, channel=call.channel, noise=noise)
        record.divergence, record.divergence_kind, record.divergence_evidence = (
            result.score,
            result.kind,
            result.evidence,
        )
        record.status = "complete"
        try:
            await self.records.write(record)
        except RecordError as exc:  # stays pending in the store: the next drain retries it
            log.error("shadow result of %s not stored: %s", record.id, exc)

    async def drain(self) -> DrainReport:
        """Complete every pending record in the store. A record that cannot be read or
        simulated is reported and skipped: the rest still complete."""
        report = DrainReport()
        for row in await self.store.pending():
            record_id = str(row.get("id", "?"))
            try:
                record = Record.from_json(row)
                earlier = await self.store.session_records(
                    record.call.session_id, before_step=record.step, limit=_DRAIN_HISTORY
                )
                history = [Turn(r.call, r.served, perturbed=r.perturbation is not None) for r in earlier]
                await self.complete(record, Session(id=shadow_session_id(record), history=history))
            except (AttributeError, KeyError, TypeError, ValueError, StoreError, SimulatorUnavailable) as exc:
                # A record that does not read back, or the world model is down: it stays pending.
                log.error("pending record %s not completed: %s: %s", record_id, type(exc).__name__, exc)
                report.failed.append(f"{record_id}: {type(exc).__name__}: {exc}")
                continue
            report.completed += 1
        return report

    async def wait(self, timeout_s: float) -> None:
        """Give queued and running shadow work `timeout_s` to finish; what does not stays pending."""
        if self.in_flight:
            try:
                await asyncio.wait_for(self._queue.join(), timeout_s)
            except TimeoutError:
                pass

    async def aclose(self, grace_s: float = 2.0) -> None:
        await self.wait(grace_s)
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._workers = []
