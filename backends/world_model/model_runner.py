"""The model runner contract and its errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from backends.errors import BackendError, BackendUnavailable, BadBackendInput, DeadlineExceeded
from calls import SimulatorUnavailable


class WorldModelError(BackendError):
    """The world model could not produce a prediction; the message says why. Raised
    by the model runners and the answer parsers; the simulator retries a malformed answer
    once and turns any other into an error observation naming the cause."""


class WorldModelTimeout(WorldModelError, DeadlineExceeded):
    """The model was busy past the call's deadline, or did not finish within it
    (its work is stopped at the deadline, never left running)."""


class ContextOverflow(WorldModelError, BadBackendInput):
    """The prompt and the tokens to generate do not fit the model's context."""


class ModelUnavailable(WorldModelError, BackendUnavailable, SimulatorUnavailable):
    """The model file is missing or unloadable, its chat format unknown, or the
    model server is down. Background (shadow) work gets it raised, as the router's
    `SimulatorUnavailable`, and waits for the model."""


@dataclass(slots=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    evaluated_tokens: int  # prompt tokens actually evaluated (not reused from a cached prefix)
    latency_s: float
    finish_reason: str
    # The model that answered (a GGUF file's name, a served model's name), named in the
    # observation's source; per completion, as a model runner may pick a model per request.
    model: str = ""


class ModelRunner(Protocol):
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
        grammar: str | None = None,  # GBNF for the generated text (an in-process model runner, llama-server)
        stop: list[str] | None = None,  # more stop strings beside the chat template's
        temperature: float | None = None,  # None: the model runner's configured temperature
        seed_offset: int = 0,  # a retry asks with another seed: the same seed gives the same answer
    ) -> Completion: ...

    async def read_ahead(self, messages: list[dict[str, Any]], *, deadline_s: float = 120.0) -> int:
        """Read the system prompt of `messages` ahead of any call, where the model runner can
        keep what it read for later sessions; returns the tokens read (0: nothing kept)."""

    def count_tokens(self, text: str) -> int: ...

    async def aclose(self) -> None: ...
