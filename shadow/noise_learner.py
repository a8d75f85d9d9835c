"""Learning noise passively: every real answer is compared, off the agent's path,
with the previous real answer to the same call (same call key), and the paths
where they disagree are counted in the store's noise table.

The previous answers are kept in memory (a bounded LRU by call key), so learning
costs no store query; a queue bounds the work, and a full queue drops pairs
(counted) rather than slow the agent down. Once a tool has given `full_pairs`
pairs in this process, only one pair in `sample_every` is learned: the table's
rates are settled by then, and a hot tool must not cost a comparison and a store
write on every call.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict

from router.types import Observation, Provenance
from shadow.canonical import tool_key
from shadow.noise import NoiseStore, pair_disagreements
from shadow.records import Record

log = logging.getLogger("simroute.noise")


class NoiseLearner:
    def __init__(self, store: NoiseStore, *, keys: int = 10_000, queue_size: int = 1024, full_pairs: int = 50, sample_every: int = 20) -> None:
        self.store = store
        self.keys = keys
        self.full_pairs = full_pairs
        self.sample_every = sample_every
        self._pairs_seen: dict[str, int] = {}  # tool key -> pairs offered in this process
        self.dropped = 0  # pairs not learned because the queue was full
        self.learned = 0
        self._previous: OrderedDict[str, Observation] = OrderedDict()
        self._queue: asyncio.Queue[tuple[Record, Observation]] = asyncio.Queue(maxsize=queue_size)
        self._worker: asyncio.Task[None] | None = None

    def offer(self, record: Record) -> None:
        """A record was written: if it is a real answer to a call answered before, queue the pair."""
        if record.served.provenance is not Provenance.REAL or record.status not in ("complete", "pending"):
            return
        previous = self._previous.pop(record.call_key, None)
        self._previous[record.call_key] = record.served
        if len(self._previous) > self.keys:
            self._previous.popitem(last=False)
        if previous is None or not self._worth_learning(record):
            return
        try:
            self._queue.put_nowait((record, previous))
        except asyncio.QueueFull:
            self.dropped += 1
            return
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._learn_forever(), name="simroute-noise-learner")

    def _worth_learning(self, record: Record) -> bool:
        key = tool_key(record.call.channel, record.call.server, record.call.tool)
        seen = self._pairs_seen[key] = self._pairs_seen.get(key, 0) + 1
        return seen <= self.full_pairs or seen % self.sample_every == 0

    async def _learn_forever(self) -> None:
        while True:
            record, previous = await self._queue.get()
            call = record.call
            try:
                # The comparison runs in a worker thread: a large pair never stalls the loop.
                disagreeing = await asyncio.to_thread(pair_disagreements, previous, record.served, channel=call.channel)
                await self.store.add_noise_observation(tool_key(call.channel, call.server, call.tool), disagreeing, name=f"{call.server}.{call.tool}")
                self.learned += 1
            except Exception:  # one pair that cannot be learned never stops learning
                log.exception("noise pair of %s.%s not learned", call.server, call.tool)
            finally:
                self._queue.task_done()

    async def wait(self, timeout_s: float) -> None:
        try:
            await asyncio.wait_for(self._queue.join(), timeout_s)
        except TimeoutError:
            pass

    async def aclose(self) -> None:
        if self._worker is not None:
            await self.wait(1.0)
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None
