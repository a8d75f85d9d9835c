"""What the upstream guard hands around: an admitted call's `Ticket`, a refused
call's `Refused`. The guard's state and its rules (breaker, slots, budgets), kept in
the process or shared through Redis, are records/shared_state/guard_slots.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from records.shared_state.guard_slots import Limits, Refusal
from router.engine.real_calls import RealOutcome

# How the real side did, as the engine tells every addon (router/engine/real_calls.py).
Outcome = RealOutcome


@dataclass(frozen=True, slots=True)
class Ticket:
    """An admitted call's claim: released when its real side has answered."""

    upstream: str
    limits: Limits
    slot: str
    trial: bool


@dataclass(frozen=True, slots=True)
class Refused:
    upstream: str
    refusal: Refusal
    retry_after_s: float
    message: str

    @property
    def note(self) -> str:
        return f"upstream guard refused the real call ({self.refusal}): nothing was sent to {self.upstream!r}"
