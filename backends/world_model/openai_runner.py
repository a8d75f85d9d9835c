"""A world model behind any OpenAI-compatible chat endpoint: llama-server
(`--jinja`), vLLM, SGLang, llama-cpp-python's server.

Thinking that a server's reasoning parser returns separately
(`reasoning_content`) is never part of the prediction.

The deadline covers the whole exchange (httpx's timeout is per read, so a server
that trickles its answer would otherwise hold a call far past it). Output schemas
go as `response_format` type `json_schema` (vLLM, SGLang, llama-server); a server
that only knows `json_object` with a `schema` (llama-cpp-python's) gets that form
from then on. Text-shaped channels (terminal screens, HTTP messages, pages) send
their GBNF grammar as `grammar` (llama-server applies it); a server that rejects
the field is sent none from then on. Either way the simulator checks the answer
with the channel's checker and asks once more before a clear error.
"""

from __future__ import annotations

import time
from typing import Any

import anyio

from backends.world_model.model_runner import Completion, ModelUnavailable, WorldModelError, WorldModelTimeout


class OpenAICompatibleRunner:
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
        self._schema_as_json_object = False  # learnt from a server that rejects type json_schema
        self._grammar_rejected = False  # learnt from a server that rejects the `grammar` field

    async def start(self) -> None:
        if self._client is None:
            import httpx2

            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._client = httpx2.AsyncClient(headers=headers)

    async def read_ahead(self, messages: list[dict[str, Any]], *, deadline_s: float = 120.0) -> int:
        """Nothing to keep here: a model server caches prompt prefixes on its own."""
        return 0

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
        grammar: str | None = None,
        stop: list[str] | None = None,
        temperature: float | None = None,
        seed_offset: int = 0,
    ) -> Completion:
        import httpx2

        await self.start()
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
            "top_p": self.top_p,
            **({"seed": self.seed + seed_offset} if self.seed is not None else {}),
            **({"stop": list(stop)[:4]} if stop else {}),  # OpenAI's API takes up to four
            **self.extra_body,
        }
        if grammar is not None and json_schema is None and not self._grammar_rejected:
            body["grammar"] = grammar
        url = f"{self.base_url}/chat/completions"
        started = time.monotonic()
        try:
            with anyio.fail_after(deadline_s):
                response = await self._post(url, body, json_schema, deadline_s)
                if json_schema is not None and not self._schema_as_json_object and _rejects_json_schema(response):
                    self._schema_as_json_object = True
                    response = await self._post(url, body, json_schema, deadline_s - (time.monotonic() - started))
                if "grammar" in body and response.status_code in (400, 422) and "grammar" in response.text:
                    self._grammar_rejected = True
                    body.pop("grammar")
                    response = await self._post(url, body, json_schema, deadline_s - (time.monotonic() - started))
        except (TimeoutError, httpx2.TimeoutException) as exc:
            raise WorldModelTimeout(f"world model at {url} did not answer within its {deadline_s:g}s deadline") from exc
        except httpx2.TransportError as exc:
            raise ModelUnavailable(f"world model server {url} is unreachable: {type(exc).__name__}: {exc}") from exc
        except httpx2.HTTPError as exc:  # the exchange failed past the connection (redirects, an undecodable body)
            raise WorldModelError(f"world model server {url} failed: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise WorldModelError(
                f"world model server {url} answered HTTP {response.status_code}: {response.text[:300]}"
            )
        try:
            data = response.json()
            choice = data["choices"][0]
            message = choice["message"]
            text = message.get("content") or ""
            reasoning = message.get("reasoning_content") or message.get("reasoning") or ""
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise WorldModelError(f"world model server {url} sent an unexpected answer: {response.text[:300]}") from exc
        if not text.strip() and "<predicted_observation>" in reasoning:
            # A reasoning parser that never saw the end of the thinking puts the whole
            # answer, prediction included, in reasoning_content: the tag is the answer.
            text = reasoning[reasoning.rindex("<predicted_observation>") :]
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
            # The name asked for, not the answer's `model`: some servers (llama-server) answer a placeholder there.
            model=self.model,
        )

    async def _post(self, url: str, body: dict[str, Any], json_schema: dict[str, Any] | None, timeout_s: float) -> Any:
        if json_schema is not None:
            if self._schema_as_json_object:
                body = {**body, "response_format": {"type": "json_object", "schema": json_schema}}
            else:
                body = {
                    **body,
                    "response_format": {
                        "type": "json_schema",
                        "json_schema": {"name": "observation", "schema": json_schema},
                    },
                }
        return await self._client.post(url, json=body, timeout=max(timeout_s, 0.001))

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def _rejects_json_schema(response: Any) -> bool:
    """llama-cpp-python's server validates response_format.type against text|json_object
    (HTTP 422, or 500 wrapping the validation error)."""
    return (
        response.status_code in (400, 422, 500)
        and "json_object" in response.text
        and "response_format" in response.text
    )
