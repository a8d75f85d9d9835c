"""The REST calls of the episodes API (router/episodes/rest.py serves them), made by one
pooled HTTP client: `simroute.Episodes(url=…)` and `simroute.Env(url=…)` both go
through here. Every call is one request; a refusal raises the `EpisodeError` subclass
of its status with the server's message."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx2 as httpx

from simroute.errors import episode_error

DEFAULT_MAX_CONNECTIONS = 256


class RestBackend:
    """Episodes on a `simroute serve` at `url` (e.g. http://127.0.0.1:8765).

    Every episode shares one connection pool of `max_connections`: thousands of
    concurrent episodes queue for a connection (no pool timeout) rather than open one
    each. `timeout_s` bounds connecting, sending and waiting for one answer; a step the
    world model or a real tool answers slowly needs a generous one."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        timeout_s: float | None = 300.0,
    ) -> None:
        self.url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        self._timeout = httpx.Timeout(timeout_s, pool=None)
        self._http: httpx.AsyncClient | None = None

    async def start(self) -> None:
        # Made here, inside the event loop that will use it: `simroute.Env` runs its
        # client on a loop of its own.
        if self._http is None:
            self._http = httpx.AsyncClient(
                base_url=self.url, headers=self._headers, timeout=self._timeout, limits=self._limits
            )

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def reset(
        self, *, seed: int | None, episode_id: str | None, options: dict[str, Any] | None
    ) -> dict[str, Any]:
        """{episode_id, mcp_url, observation, state}."""
        body = {"seed": seed, "episode_id": episode_id, "options": options}
        answer: dict[str, Any] = await self._request("POST", "/episodes", body)
        answer["mcp_url"] = self.url + answer["mcp_url"]  # absolute: an MCP client needs the host
        return answer

    async def step(self, episode_id: str, action: dict[str, Any]) -> dict[str, Any]:
        """{observation, reward, done, info}."""
        return await self._request("POST", f"{_path(episode_id)}/step", action)

    async def state(self, episode_id: str) -> dict[str, Any]:
        return await self._request("GET", f"{_path(episode_id)}/state")

    async def verify(self, episode_id: str, *, terminate: bool = False) -> float:
        answer = await self._request("POST", f"{_path(episode_id)}/verify", {"terminate": terminate})
        return float(answer["reward"])

    async def close(self, episode_id: str) -> None:
        await self._request("DELETE", _path(episode_id))

    async def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        if self._http is None:
            raise RuntimeError("simroute: the episodes client is not started (use `async with simroute.Episodes(...)`)")
        response = await self._http.request(method, path, json=body)
        if response.status_code >= 400:
            raise episode_error(response.status_code, _message_of(response))
        return response.json() if response.content else None


def _path(episode_id: str) -> str:
    return "/episodes/" + quote(episode_id, safe="")


def _message_of(response: httpx.Response) -> str:
    """simroute's `{"error": …}`, or FastAPI's validation `{"detail": [...]}` (a
    malformed action or reset body), or the bare text (a proxy's page)."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip() or f"HTTP {response.status_code}"
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    if isinstance(body, dict) and isinstance(body.get("detail"), list):
        problems = [
            f"{'.'.join(str(p) for p in item.get('loc', ()))}: {item.get('msg')}"
            for item in body["detail"]
            if isinstance(item, dict)
        ]
        return "simroute: invalid request: " + "; ".join(problems)
    return str(body)
