"""Learning noise from real-vs-real pairs, off the agent's path.

Passively: every real answer to a read-only call is compared with the previous
real answer to the same call (same call key), and the paths where they
disagree are counted in the store's noise table. Actively, when
`shadow.noise_probe_rate` asks for it: a call known to be read-only is made a
second time, off the agent's path, and the two answers are compared the same way.

A pair only counts as evidence of noise when nothing the router saw could have
changed what the call reads between the two answers:
- the call reads only (the front door knows it — MCP `readOnlyHint`, HTTP
  GET/HEAD/OPTIONS — or the safety gate classes it `safe`); the answer to a
  call that writes differs because of the call itself;
- no call that may write to the same server (same channel and server) was in
  flight at any time from the first call's sending to the second's answer. Each
  server has an epoch, advanced when such a call is sent and when it ends; a
  pair counts when the first call was sent at a quiet moment (nothing writing)
  and the epoch is still the same when the second answers. This is a few
  integer operations per call, and sound for everything this process routes;
- no other router sharing the store (Redis, or one SQLite file) made such a call
  from the first call's start to the second's answer: before a queued pair is
  compared, the worker asks the store (`writes_between`: the records of calls
  that may write, indexed by server). The epoch stays the first filter, on the
  call path and free; the store is asked off it, once per pair learned. Writes
  made outside simroute, or whose records were spooled rather than stored, are
  not seen;
- values counting up between the answers are state, not noise (`is_counter_step`).

With tokens on, pairs are made within a token namespace and counted under its
prefix (`alice/` + the tool key): one token's answers never teach another's table
(the shadow runner reads a session's own namespace and the shared ones).

The previous answers are kept in memory (a bounded LRU by call key), so learning
costs no store query; a queue bounds the comparisons, and a full queue drops
pairs (counted) rather than slow the agent down. Once a tool has given
`full_pairs` pairs in this process, only one passive pair in `sample_every` is
learned: the table's rates are settled by then, and a hot tool must not cost a
comparison and a store write on every call.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from calls import Call, Observation, Provenance, tool_key
from records.record import Record
from records.store.protocol import StoreError
from shadow.compare.noise import NoiseStore, pair_disagreements

log = logging.getLogger("simroute.noise")


@dataclass(frozen=True, slots=True)
class _Pair:
    """Two real answers to one read-only call, and the time they span: from the first
    call's start to the second's answer."""

    call: Call
    first: Observation
    second: Observation
    since: float
    until: float


@dataclass(slots=True)
class _ServerActivity:
    epoch: int = 0  # advanced when a call that may write is sent to the server, and when it ends
    writing: int = 0  # such calls in flight


class NoiseLearner:
    def __init__(
        self,
        store: NoiseStore,
        *,
        keys: int = 10_000,
        queue_size: int = 1024,
        full_pairs: int = 50,
        sample_every: int = 20,
        max_probes: int = 4,
        probe_delay_s: float = 1.0,
        scope: Callable[[str], str] = lambda session_id: "",
    ) -> None:
        self.store = store
        # A session id -> the prefix of its token namespace ('' without tokens): pairs
        # are made and counted per namespace, so one token's answers never teach
        # another's noise table.
        self.scope = scope
        self.keys = keys
        self.full_pairs = full_pairs
        self.sample_every = sample_every
        self.max_probes = max_probes
        self.probe_delay_s = probe_delay_s
        self._pairs_seen: dict[str, int] = {}  # tool key -> passive pairs offered in this process
        self.dropped = 0  # pairs not learned because the queue was full
        self.learned = 0
        self.unsettled = 0  # pairs not learned: a call that may write to the server came between them
        self.probed = 0  # probes answered and queued
        self.probes_skipped = 0  # probes not made: `max_probes` already running
        self.probes_failed = 0  # probes that raised, timed out or did not answer from the real side
        self._servers: dict[tuple[str, str], _ServerActivity] = {}
        # call key -> (the last real answer, the epoch its call was sent in, when its call started)
        self._previous: OrderedDict[str, tuple[Observation, int, float]] = OrderedDict()
        self._queue: asyncio.Queue[_Pair] = asyncio.Queue(maxsize=queue_size)
        self._worker: asyncio.Task[None] | None = None
        self._probes: set[asyncio.Task[None]] = set()

    # What the engine tells it about each call to the real side.

    def quiet_epoch(self, channel: str, server: str) -> int | None:
        """The server's epoch when nothing that may write to it is in flight (a read-only
        call sent now reads a settled state), else None. Asked when a call is sent."""
        activity = self._servers.get((channel, server))
        if activity is None:
            return 0
        return activity.epoch if activity.writing == 0 else None

    def writing(self, channel: str, server: str) -> None:
        """A call that may write to the server is being sent."""
        activity = self._servers.setdefault((channel, server), _ServerActivity())
        activity.epoch += 1
        activity.writing += 1

    def written(self, channel: str, server: str) -> None:
        """A call `writing` announced has ended (answered, failed or cancelled)."""
        activity = self._servers.setdefault((channel, server), _ServerActivity())
        activity.epoch += 1
        activity.writing = max(0, activity.writing - 1)

    def offer(self, record: Record, *, read_only: bool, sent_in: int | None) -> None:
        """A record was written. If it is a real answer to a read-only call sent in epoch
        `sent_in` (None: something was writing then), and the same call was answered
        before with nothing written to the server since, queue the pair."""
        if record.served.provenance is not Provenance.REAL or record.status not in ("complete", "pending"):
            return
        call = record.call
        previous_key = self.scope(call.session_id) + record.call_key
        previous = self._previous.pop(previous_key, None)
        if not read_only:
            return  # the call itself may have changed what it reads
        if sent_in is None:  # an answer that may reflect a write in progress is no baseline either
            self.unsettled += previous is not None
            return
        self._previous[previous_key] = (record.served, sent_in, record.ts)
        if len(self._previous) > self.keys:
            self._previous.popitem(last=False)
        if previous is None:
            return
        first, first_epoch, first_ts = previous
        if first_epoch != self.quiet_epoch(call.channel, call.server):
            self.unsettled += 1
            return
        if self._worth_learning(call):
            self._queue_pair(_Pair(call, first, record.served, first_ts, record.ended or time.time()))

    def probe(self, record: Record, again: Callable[[], Awaitable[Observation]], *, sent_in: int | None) -> bool:
        """Make the read-only call of `record` again off the agent's path (after
        `probe_delay_s`, so that a clock with one-second resolution has moved), and
        learn from the pair. False when it is not made (already `max_probes` running,
        or the first call was not sent at a quiet moment)."""
        if sent_in is None or record.served.provenance is not Provenance.REAL:
            return False
        if len(self._probes) >= self.max_probes:
            self.probes_skipped += 1
            return False
        task = asyncio.get_running_loop().create_task(self._probe(record, again, sent_in), name="simroute-noise-probe")
        self._probes.add(task)
        task.add_done_callback(self._probes.discard)
        return True

    async def _probe(self, record: Record, again: Callable[[], Awaitable[Observation]], sent_in: int) -> None:
        call = record.call
        try:
            await asyncio.sleep(self.probe_delay_s)
            if self.quiet_epoch(call.channel, call.server) != sent_in:
                self.unsettled += 1
                return
            answer = await again()
        # Boundary: a probe is optional work off the agent's path. Its failure is
        # counted and logged; it never raises into the router.
        except Exception as exc:  # noqa: BLE001
            self.probes_failed += 1
            log.warning("noise probe of %s.%s failed: %s: %s", call.server, call.tool, type(exc).__name__, exc)
            return
        if answer.provenance is not Provenance.REAL:
            self.probes_failed += 1
            return
        if self.quiet_epoch(call.channel, call.server) != sent_in:
            self.unsettled += 1
            return
        self.probed += 1
        self._queue_pair(_Pair(call, record.served, answer, record.ts, time.time()))

    def _queue_pair(self, pair: _Pair) -> None:
        try:
            self._queue.put_nowait(pair)
        except asyncio.QueueFull:
            self.dropped += 1
            return
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._learn_forever(), name="simroute-noise-learner")

    def _worth_learning(self, call: Call) -> bool:
        key = self.scope(call.session_id) + tool_key(call.channel, call.server, call.tool)
        seen = self._pairs_seen[key] = self._pairs_seen.get(key, 0) + 1
        return seen <= self.full_pairs or seen % self.sample_every == 0

    async def _learn_forever(self) -> None:
        while True:
            pair = await self._queue.get()
            call = pair.call
            try:
                if await self._written_elsewhere(pair):
                    self.unsettled += 1
                    continue
                # The comparison runs in a worker thread: a large pair never stalls the loop.
                disagreeing = await asyncio.to_thread(pair_disagreements, pair.first, pair.second, channel=call.channel)
                scope = self.scope(call.session_id)
                await self.store.add_noise_observation(
                    scope + tool_key(call.channel, call.server, call.tool),
                    disagreeing,
                    name=f"{scope}{call.server}.{call.tool}",
                )
                self.learned += 1
            # Boundary: the learner's background loop. A pair that cannot be learned is
            # logged; it never stops learning.
            except Exception:
                log.exception("noise pair of %s.%s not learned", call.server, call.tool)
            finally:
                self._queue.task_done()

    async def _written_elsewhere(self, pair: _Pair) -> bool:
        """Whether the store knows of a call that may have written to the pair's server
        between its answers (it finds this router's too, which the epoch has already
        ruled out: the point is the others'). A store that cannot tell settles nothing:
        the pair is not learned."""
        call = pair.call
        try:
            return await self.store.writes_between(call.channel, call.server, since=pair.since, until=pair.until)
        except StoreError as exc:
            log.warning(
                "noise pair of %s.%s not learned: writes to the server cannot be looked up: %s",
                call.server,
                call.tool,
                exc,
            )
            return True

    async def wait(self, timeout_s: float) -> None:
        """Give running probes and queued pairs `timeout_s` to be learned."""
        try:
            async with asyncio.timeout(timeout_s):
                while self._probes:
                    await asyncio.gather(*list(self._probes), return_exceptions=True)
                await self._queue.join()
        except TimeoutError:
            pass

    async def aclose(self) -> None:
        for task in list(self._probes):
            task.cancel()
        await asyncio.gather(*list(self._probes), return_exceptions=True)
        if self._worker is not None:
            await self.wait(1.0)
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)
            self._worker = None
