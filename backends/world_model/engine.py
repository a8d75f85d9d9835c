"""The world-model engine contract and its errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class WorldModelError(RuntimeError):
    """The world model could not produce a prediction. The message says why."""


class WorldModelTimeout(WorldModelError):
    pass


class ContextOverflow(WorldModelError):
    pass


class ModelUnavailable(WorldModelError):
    """The model file is missing, or the model server is down."""


@dataclass(slots=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    evaluated_tokens: int  # prompt tokens actually evaluated (not reused from a cached prefix)
    latency_s: float
    finish_reason: str


class WorldModelEngine(Protocol):
    async def start(self) -> None:
        """Load or connect; never charged to a call's deadline."""

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        session_id: str,
        deadline_s: float,
        max_tokens: int,
        json_schema: dict[str, Any] | None = None,
        background: bool = False,  # shadow work: the agent's own calls go first
        grammar: str | None = None,  # GBNF for the generated text (an in-process engine, llama-server)
        stop: list[str] | None = None,  # more stop strings beside the chat template's
        temperature: float | None = None,  # None: the engine's configured temperature
        seed_offset: int = 0,  # a retry asks with another seed: the same seed gives the same answer
    ) -> Completion: ...

    async def read_ahead(self, messages: list[dict[str, Any]], *, deadline_s: float = 120.0) -> int:
        """Read the system prompt of `messages` ahead of any call, where the engine can
        keep what it read for later sessions; returns the tokens read (0: nothing kept)."""

    def count_tokens(self, text: str) -> int: ...

    async def aclose(self) -> None: ...
