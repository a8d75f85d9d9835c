"""Feeds the noise learner (`shadow.noise_learner`): the server's quiet epoch when a
call is decided, the calls that may write to a server while they run, each finished
real answer, and, for a `probe_rate` sample of real calls known read-only, the same
call sent again off the agent's path (pairs without repeated agent calls)."""

from __future__ import annotations

import random

from records.record import Record
from router.engine.addons import Again, CallAddon
from router.engine.pending import Pending
from shadow.noise_learner import NoiseLearner


class NoiseWatch(CallAddon):
    _EPOCH, _ANNOUNCED = "noise.quiet_epoch", "noise.announced_write"

    def __init__(self, learner: NoiseLearner, *, probe_rate: float = 0.0, rng: random.Random | None = None) -> None:
        self.learner = learner
        self.probe_rate = probe_rate
        self.rng = rng or random.Random()

    async def decided(self, pending: Pending) -> None:
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
        if (
            self.probe_rate <= 0
            or not pending.needs_real
            or not pending.known_read_only()
            or self.rng.random() >= self.probe_rate
        ):
            return False
        return self.learner.probe(record, again, sent_in=pending.metadata.get(self._EPOCH))

    async def aclose(self) -> None:
        await self.learner.aclose()
