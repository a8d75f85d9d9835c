"""MCP over streamable HTTP at the wire: JSON-RPC bodies written by hand and the
messages read back from an answer, for tests that send what no SDK client would."""

from __future__ import annotations

import json
import re

import httpx2 as httpx

PROTOCOL = "2025-06-18"
ACCEPT = "application/json, text/event-stream"


def rpc(method: str, params, id_) -> bytes:
    """A JSON-RPC message: a request with an id, a notification without."""
    message: dict = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id_ is not None:
        message["id"] = id_
    return json.dumps(message).encode()


def messages_of(answer: httpx.Response) -> list:
    """The JSON-RPC messages in an answer (JSON, or an event stream's data lines)."""
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        # SSE lines end at CR, LF or CRLF only (str.splitlines would also cut at U+0085, U+2028… inside the JSON)
        lines = re.split(r"\r\n|\r|\n", answer.text)
        return [json.loads(line[5:]) for line in lines if line.startswith("data:") and line[5:].strip()]
    try:
        value = answer.json()
    except ValueError:
        return []
    return value if isinstance(value, list) else [value]


class WireSession:
    """An MCP session on a streamable-HTTP endpoint, driven at the wire: POSTs of raw
    JSON-RPC bodies (any id, concurrently from threads) and its DELETE."""

    def __init__(self, http: httpx.Client, url: str) -> None:
        self.http, self.url = http, url  # the endpoint: http://host:port/mcp
        hello = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "wire", "version": "0"}}
        answer = self.post(rpc("initialize", hello, 0))
        assert answer.status_code == 200, answer.text
        self.id: str = answer.headers["mcp-session-id"]
        assert self.post(rpc("notifications/initialized", None, None)).status_code == 202

    def post(self, body: bytes) -> httpx.Response:
        headers = {"Content-Type": "application/json", "Accept": ACCEPT, "Mcp-Protocol-Version": PROTOCOL}
        if hasattr(self, "id"):
            headers["Mcp-Session-Id"] = self.id
        return self.http.post(self.url, content=body, headers=headers)

    def close(self) -> httpx.Response:
        return self.http.delete(self.url, headers={"Mcp-Session-Id": self.id, "Mcp-Protocol-Version": PROTOCOL})
