"""What the engine asks of the sides it cannot build itself: the real side of a call
(a front door's `CallNext`), the fork route's backend, and the simulated side."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from calls.call import Call, Observation
from calls.perturbation import Steer
from calls.session import Session

# The real side of a call, handed to the engine by the front door that owns it.
CallNext = Callable[[Call], Awaitable[Observation]]


class ForkRefused(Exception):
    """A call routed `fork` that cannot be forked (the channel cannot fork, its state
    is over `fork.max_bytes`, no sandbox engine): the message says why; the engine
    then simulates the call and records the reason."""


class Forks(Protocol):
    """The fork route's backend: runs `call` against the session's fork of its channel
    (made at the session's first forked call), provenance `fork`; raises ForkRefused."""

    def can_fork(self, channel: str) -> bool: ...

    async def run(self, call: Call, session: Session, *, deadline_s: float) -> Observation: ...


class SimulatorUnavailable(Exception):
    """The simulated side is down (no model file, no model server): raised to
    background work only (see `Simulator`), which waits for it and tries again."""


class Simulator(Protocol):
    """The simulated side: predicts the observation of a call in its session.
    Never raises for a model failure (it answers with an error observation), except
    that `background` work (shadowing), which yields to the agent's own simulated
    calls, gets `SimulatorUnavailable` when the model is down: the work waits for the
    model instead of recording its absence as the model's answer. `steer`
    (a meaning-level perturbation) shapes one answer and is checked against it."""

    async def simulate(
        self, call: Call, session: Session, *, deadline_s: float, background: bool = False, steer: Steer | None = None
    ) -> Observation: ...
