"""What a world-model domain (MCP, Terminal, Web, HTTP) supplies to the simulator.

The simulator owns the model runner, deadlines, answer parsing and the one retry; a
domain owns how one kind of environment is put to the model, the shape its
answer is held to (a grammar, stop strings, a checker), and how a prediction
becomes an observation of the same shape the real backend returns, so the two
compare.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from backends.world_model.grammars import STOP_SEQUENCES
from backends.world_model.grounding import Grounding
from calls import Call, Observation, Session

CountTokens = Callable[[str], int]


@dataclass(slots=True)
class Constraint:
    """How one prediction is generated and judged."""

    max_tokens: int
    grammar: str | None = None  # GBNF (in-process model runner; llama-server)
    json_schema: dict[str, Any] | None = None  # endpoint model runners' response_format
    stop: list[str] = field(default_factory=lambda: list(STOP_SEQUENCES))
    temperature: float | None = None  # None: the configured one; 0 when the records agree
    check: Callable[[Observation], str | None] = lambda observation: None  # None: well-formed, else why not


class Domain(Protocol):
    def refusal(self, call: Call, session: Session) -> str | None:
        """Why this call fails without asking the model (as the real side would fail),
        e.g. a click on an element the last page snapshot did not contain; else None."""

    def ground(self, call: Call, session: Session, *, count_tokens: CountTokens) -> Grounding:
        """The recorded real observations this call is grounded in (see grounding.py)."""

    def messages(
        self,
        call: Call,
        session: Session,
        *,
        budget_tokens: int,
        count_tokens: CountTokens,
        grounding: Grounding | None = None,
    ) -> list[dict[str, str]]:
        """The chat messages for simulating `call` after the session's history."""

    def constraint(self, call: Call, session: Session, grounding: Grounding, *, max_tokens: int) -> Constraint:
        """The grammar, budget, sampling and checker for this call's prediction;
        `max_tokens` is the configured ceiling."""

    def observation(self, call: Call, prediction: str) -> Observation:
        """The observation for a prediction's text, shaped like the real backend's.
        Raises InvalidPrediction when it cannot be read. Provenance and latency are
        set by the caller."""
