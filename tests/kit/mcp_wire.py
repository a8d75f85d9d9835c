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
