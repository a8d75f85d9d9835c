"""The judge's model client (`simroute judge`): one of the model runners
(backends/world_model/openai_runner.py) behind any OpenAI-compatible endpoint, asked
at temperature 0 for a verdict in the judge's JSON shape, every call within its
deadline. The model runners' errors become the judge's at this boundary."""

from __future__ import annotations

import os
from typing import Any

from backends.world_model.model_runner import ModelUnavailable, WorldModelError
from backends.world_model.openai_runner import OpenAICompatibleRunner
from records.judge.prompt import VERDICT_SCHEMA
from records.judge.run import JudgeError, JudgeUnavailable

# The judge endpoint's API key: read from the environment, never an option (it would show in `ps`).
API_KEY_VARIABLE = "SIMROUTE_JUDGE_API_KEY"


class ModelRunnerJudge:
    """A `records.judge.run.JudgeModel` made of an OpenAI-compatible model runner."""

    @classmethod
    def from_environment(cls, endpoint: str, *, model: str, max_tokens: int = 256) -> ModelRunnerJudge:
        """The judge at `endpoint`, with the API key `API_KEY_VARIABLE` holds (if any)."""
        return cls(endpoint, model=model, api_key=os.environ.get(API_KEY_VARIABLE) or None, max_tokens=max_tokens)

    def __init__(
        self, endpoint: str, *, model: str, api_key: str | None = None, max_tokens: int = 256, seed: int = 0
    ) -> None:
        self.endpoint = endpoint
        self.name = model
        self.max_tokens = max_tokens
        self.model_runner = OpenAICompatibleRunner(
            endpoint, model=model, api_key=api_key, temperature=0.0, top_p=1.0, seed=seed
        )

    async def answer(self, chat: list[dict[str, Any]], *, deadline_s: float, attempt: int) -> str:
        try:
            done = await self.model_runner.complete(
                chat,
                session_id="judge",
                deadline_s=deadline_s,
                max_tokens=self.max_tokens,
                json_schema=VERDICT_SCHEMA,
                temperature=0.0,
                seed_offset=attempt,  # the retry is asked with another seed
            )
        except ModelUnavailable as exc:
            raise JudgeUnavailable(str(exc)) from exc
        except WorldModelError as exc:  # a timeout, an HTTP error, an unexpected answer
            raise JudgeError(str(exc)) from exc
        return done.text

    async def aclose(self) -> None:
        await self.model_runner.aclose()
