"""What watches calls without deciding or answering them, told each call's events.

Like a mitmproxy addon, a watcher implements the hooks it needs, named after the
event, and the engine calls every watcher's hook in list order:

- `decided(pending)`: the route is chosen; nothing has run yet.
- `sending(pending, record)`: a call that may change the real world is about to be
  sent real; `record` is its write-ahead record (status `started`).
- `finished(pending, record)`: the call ended, however it ended; `record` is what
  the agent gets, as stored (secrets redacted). The agent sees the answer next.
- `repeatable(pending, record, again)`: a finished call that the front door can send
  again off the agent's path (`again`, under the call's deadline, its answer
  redacted); a watcher that uses it says so by returning True.

The record writer is always the first watcher: every call leaves a record, and a
`RecordError` from its `sending` stops the call going real, from its `finished`
withholds the answer (the engine handles both). The noise learner watches next.
Other watchers must not raise: a watcher's failure is never the agent's.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable

from router.engine.pending import Pending
from router.types import Observation
from shadow.noise_learner import NoiseLearner
from shadow.records import Record
from shadow.store.record_log import RecordLog

Again = Callable[[], Awaitable[Observation]]


class CallWatcher:
    """The hooks, each doing nothing: a watcher overrides those it needs."""

    def decided(self, pending: Pending) -> None:
        return None

    async def sending(self, pending: Pending, record: Record) -> None:
        return None

    async def finished(self, pending: Pending, record: Record) -> None:
        return None

    def repeatable(self, pending: Pending, record: Record, again: Again) -> bool:
        return False

    async def aclose(self) -> None:
        return None


class RecordWriter(CallWatcher):
    """Writes each call's records: durable (or spooled) before the call goes real and
    before the agent sees the answer. Raises `RecordError` when it cannot."""

    def __init__(self, records: RecordLog) -> None:
        self.records = records

    async def sending(self, pending: Pending, record: Record) -> None:
        await self.records.write(record)

    async def finished(self, pending: Pending, record: Record) -> None:
        await self.records.write(record)


class NoiseWatch(CallWatcher):
    """Feeds the noise learner (`shadow.noise_learner`): the server's quiet epoch when a
    call is decided, the calls that may write to a server while they run, each
    finished real answer, and, for a `probe_rate` sample of real calls known
    read-only, the same call sent again off the agent's path."""

    _EPOCH, _ANNOUNCED = "noise.quiet_epoch", "noise.announced_write"

    def __init__(self, learner: NoiseLearner, *, probe_rate: float = 0.0, rng: random.Random | None = None) -> None:
        self.learner = learner
        self.probe_rate = probe_rate
        self.rng = rng or random.Random()

    def decided(self, pending: Pending) -> None:
        # None: a call that may write to the server was in flight, so no pair started now counts.
        pending.metadata[self._EPOCH] = self.learner.quiet_epoch(pending.call.channel, pending.call.server)

    async def sending(self, pending: Pending, record: Record) -> None:
        if not pending.reads_only():  # until it ends, answers from this server are no evidence of noise
            self.learner.writing(pending.call.channel, pending.call.server)
            pending.metadata[self._ANNOUNCED] = True

    async def finished(self, pending: Pending, record: Record) -> None:
        if pending.metadata.pop(self._ANNOUNCED, False):
            self.learner.written(pending.call.channel, pending.call.server)
        self.learner.offer(record, read_only=pending.reads_only(), sent_in=pending.metadata.get(self._EPOCH))

    def repeatable(self, pending: Pending, record: Record, again: Again) -> bool:
        if self.probe_rate <= 0 or not pending.needs_real or not pending.known_read_only() or self.rng.random() >= self.probe_rate:
            return False
        return self.learner.probe(record, again, sent_in=pending.metadata.get(self._EPOCH))

    async def aclose(self) -> None:
        await self.learner.aclose()
