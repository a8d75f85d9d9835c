"""An episode's HTTP requests (`http_request`): sent through simroute's own HTTP
channel — the proxy agents point HTTP_PROXY at — so they are routed, recorded and
answered exactly as an agent's proxied request is (provenance in
`X-Simroute-Provenance`). Each episode's client names the episode's session with a
credential simroute issued it (valid with tokens on), and closes with the episode."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx2 as httpx
from fastmcp.tools.base import Tool, ToolResult

from backends.http.messages import PERTURBATION_HEADER, PROVENANCE_HEADER, RECORD_HEADER, ROUTE_HEADER, SOURCE_HEADER
from router.http.ca import certificate_path

if TYPE_CHECKING:
    from router.config import Config
    from router.episodes.episode import Episode
    from router.runtime.parts import HttpChannel

TOOL_NAME = "http_request"
DEFINITION: dict[str, Any] = {
    "name": TOOL_NAME,
    "description": "Send an HTTP request (through simroute's HTTP channel, routed like an agent's proxied request). "
    "Returns the status, the headers and the body.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "method": {"type": "string", "description": "GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS."},
            "url": {"type": "string", "description": "An absolute http:// or https:// URL."},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}, "default": {}},
            "body": {"type": "string", "default": ""},
        },
        "required": ["method", "url"],
        "additionalProperties": False,
    },
}


class _HostAnswered(Tool):
    """Listed by the MCP front door for an episode; its calls are answered by the
    episode's host (router/episodes/steps.py), never run."""

    async def run(self, arguments: dict[str, Any], context: Any = None) -> ToolResult:
        raise RuntimeError(f"{self.name} is answered by the episode's host, not run")


TOOL = _HostAnswered(
    name=TOOL_NAME, description=str(DEFINITION["description"]), parameters=dict(DEFINITION["inputSchema"])
)


class EpisodeHttp:
    def __init__(self, channel: HttpChannel, config: Config) -> None:
        self.channel = channel
        self.config = config
        self._clients: dict[str, tuple[httpx.AsyncClient, dict[str, str]]] = {}  # by session id

    @property
    def available(self) -> bool:
        """Whether this runtime serves the HTTP channel (simroute serve with http.enabled)."""
        return self.channel.port() is not None and self.channel.credentials is not None

    def problem(self, arguments: dict[str, Any]) -> str | None:
        method, url, headers = arguments.get("method"), arguments.get("url"), arguments.get("headers", {})
        if not isinstance(method, str) or not isinstance(url, str) or not url.startswith(("http://", "https://")):
            return "http_request needs a 'method' and an absolute http(s) 'url'"
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            return "http_request's 'headers' is an object of strings"
        if not isinstance(arguments.get("body", ""), str):
            return "http_request's 'body' is a string"
        return None

    async def request(self, episode: Episode, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the result as the agent sees it, its simroute meta)."""
        client = self._client(episode)
        response = await client.request(
            arguments["method"].upper(),
            arguments["url"],
            headers=arguments.get("headers") or {},
            content=arguments.get("body") or None,
        )
        meta = {
            "provenance": response.headers.get(PROVENANCE_HEADER),
            "route": response.headers.get(ROUTE_HEADER),
            "record_id": response.headers.get(RECORD_HEADER),
            "policy": None,
        }
        if PERTURBATION_HEADER in response.headers:  # a perturbation the agent got: {kind, rule, seed, n}
            meta["perturbation"] = json.loads(response.headers[PERTURBATION_HEADER])
        if SOURCE_HEADER in response.headers:  # where within its provenance the answer came from: {sub, model, …}
            meta["source"] = json.loads(response.headers[SOURCE_HEADER])
        structured = {"status": response.status_code, "headers": dict(response.headers), "body": response.text}
        own = _simroutes_own(response, meta["provenance"])  # a refusal, or a failure of simroute or the world model
        result = {
            "content": [
                {
                    "type": "text",
                    "text": _reason(response) if own else f"HTTP {response.status_code}\n\n{response.text}",
                }
            ],
            "structuredContent": structured,
            "isError": own,
            "_meta": {"simroute": meta},
        }
        return result, meta

    def _client(self, episode: Episode) -> httpx.AsyncClient:
        found = self._clients.get(episode.session_id)
        if found is not None:
            return found[0]
        credentials = self.channel.credentials
        assert credentials is not None
        credential = credentials.issue(episode.session_id)
        proxy = f"http://{credential['username']}:{credential['password']}@127.0.0.1:{self.channel.port()}"
        client = httpx.AsyncClient(
            proxy=proxy,
            verify=str(certificate_path(self.config.ca_dir)),
            trust_env=False,
            timeout=self.config.http.timeout_s + 5,  # the channel's own deadline answers first
        )
        self._clients[episode.session_id] = (client, credential)
        return client

    async def close(self, session_id: str) -> None:
        found = self._clients.pop(session_id, None)
        if found is not None:
            client, credential = found
            assert self.channel.credentials is not None
            self.channel.credentials.revoke(credential)
            await client.aclose()


def _simroutes_own(response: httpx.Response, provenance: str | None) -> bool:
    """Whether an error answer is simroute's own: any of provenance `none`, and a
    simulated one whose JSON error is simroute's (the world model failed: malformed
    twice, or past its deadline; not a simulated 500 the model predicted)."""
    if response.status_code < 400:
        return False
    if provenance == "none":
        return True
    return provenance == "sim" and _reason(response).startswith("simroute:")


def _reason(response: httpx.Response) -> str:
    """The reason simroute gave for its own error answer (router/http/errors.py)."""
    try:
        return str(response.json()["error"])
    except (ValueError, KeyError, TypeError):
        return f"HTTP {response.status_code}\n\n{response.text}"
