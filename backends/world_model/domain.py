"""What a world-model domain (MCP, Terminal, Web, HTTP) supplies to the simulator.

The simulator owns the engine, deadlines and answer parsing; a domain owns how
one kind of environment is put to the model and how a prediction becomes an
observation of the same shape the real backend returns, so the two compare.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from router.types import Call, Observation, Session

CountTokens = Callable[[str], int]


class Domain(Protocol):
    def refusal(self, call: Call, session: Session) -> str | None:
        """Why this call fails without asking the model (as the real side would fail),
        e.g. a click on an element the last page snapshot did not contain; else None."""

    def messages(self, call: Call, session: Session, *, budget_tokens: int, count_tokens: CountTokens) -> list[dict[str, str]]:
        """The chat messages for simulating `call` after the session's history."""

    def output_schema(self, call: Call) -> dict[str, Any] | None:
        """A JSON schema the prediction must satisfy, or None for native text."""

    def observation(self, call: Call, prediction: str | dict[str, Any]) -> Observation:
        """The observation for a parsed prediction (text, or the schema-valid object),
        shaped like the real backend's. Provenance and latency are set by the caller."""
