"""A world model behind any OpenAI-compatible chat endpoint: llama-server
(`--jinja`), vLLM, SGLang, llama-cpp-python's server.

Thinking that a server's reasoning parser returns separately
(`reasoning_content`) is never part of the prediction.
"""

from __future__ import annotations

import time
from typing import Any

from backends.world_model.engine import Completion, ModelUnavailable, WorldModelError, WorldModelTimeout


class OpenAICompatibleEngine:
    def __init__(
        self,
        base_url: str,
        *,
        model: str = "default",
        api_key: str | None = None,
        temperature: float = 0.6,
        top_p: float = 0.95,
        seed: int | None = 0,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.extra_body = dict(extra_body or {})
        self._client: Any = None

    async def start(self) -> None:
        if self._client is None:
            import httpx2

            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx2.AsyncClient(headers=headers)

    def count_tokens(self, text: str) -> int:
        return len(text) // 3  # an estimate: the server owns the tokenizer

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        session_id: str,
        deadline_s: float,
        max_tokens: int,
        json_schema: dict[str, Any] | None = None,
        background: bool = False,  # the server schedules its own batches
    ) -> Completion:
        import httpx2

        await self.start()
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            **({"seed": self.seed} if self.seed is not None else {}),
            **self.extra_body,
        }
        if json_schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "observation", "schema": json_schema}}
        url = f"{self.base_url}/chat/completions"
        started = time.monotonic()
        try:
            response = await self._client.post(url, json=body, timeout=deadline_s)
        except httpx2.TimeoutException as exc:
            raise WorldModelTimeout(f"world model at {url} did not answer within its {deadline_s:g}s deadline") from exc
        except httpx2.TransportError as exc:
            raise ModelUnavailable(f"world model server {url} is unreachable: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise WorldModelError(f"world model server {url} answered HTTP {response.status_code}: {response.text[:300]}")
        try:
            data = response.json()
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise WorldModelError(f"world model server {url} sent an unexpected answer: {response.text[:300]}") from exc
        usage = data.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=int(usage.get("completion_tokens") or 0),
            evaluated_tokens=prompt_tokens - cached,
            latency_s=time.monotonic() - started,
            finish_reason=str(choice.get("finish_reason")),
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
