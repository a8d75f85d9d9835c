"""The judge's model client (`simroute judge`): one of the model runners
(backends/world_model/openai_runner.py) behind any OpenAI-compatible endpoint, asked
at temperature 0 for a verdict in the judge's JSON shape, every call within its
deadline. The model runners' errors become the judge's at this boundary."""

from __future__ import annotations

from typing import Any

from backends.world_model.model_runner import ModelUnavailable, WorldModelError
from backends.world_model.openai_runner import OpenAICompatibleRunner
from records.judge.prompt import VERDICT_SCHEMA
from records.judge.run import JudgeError, JudgeUnavailable


class ModelRunnerJudge:
    """A `records.judge.run.JudgeModel` made of an OpenAI-compatible model runner."""

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
