"""What the engine's helpers and its addons may use of it (`EngineParts`), and its
deadlines: a narrow view, so neither needs the `Engine` class itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from backends.replay import ReplayBackend
from calls import Call, Forks, Observation, Session, Simulator, Steer
from records.redaction import Redactor
from records.shared_state.session_state import SessionState
from router.engine.replay_modes import ReplayModes


def _default_deadline(call: Call) -> float:
    return 60.0


@dataclass(frozen=True, slots=True)
class Deadlines:
    """A call's deadline on the real side and on the sim route (`sim_for` None: the real one's)."""

    real: Callable[[Call], float] = _default_deadline
    sim_for: Callable[[Call], float] | None = None

    def sim(self, call: Call) -> float:
        return (self.sim_for or self.real)(call)


class EngineParts(Protocol):
    """Read when used: the runtime sets the redactor at start, tests swap parts."""

    replay: ReplayBackend
    replay_modes: ReplayModes
    simulator: Simulator | None
    forks: Forks | None  # the fork route's backend (None: nothing can fork)
    session_state: SessionState
    redactor: Redactor | None
    deadlines: Deadlines
    owner: str

    async def simulate(
        self, call: Call, session: Session, deadline_s: float | None = None, steer: Steer | None = None
    ) -> Observation:
        """The sim route's answer (never raises)."""
        ...
