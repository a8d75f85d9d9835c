"""A retried `tools/call` is answered once (an episode's calls: an RL harness retries a
request whose answer it lost, and the call must not run twice).

A retry is the same request id on the same MCP session with the same tool and
arguments; the first answer (or the call still running) serves it. Bounded per session: the oldest are forgotten
(records/shared_state/answered_once.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from calls import SessionSlice


@dataclass(slots=True)
class RetriedRequests(SessionSlice):
    """An episode's answers to its recent tools/call requests, by request (a slice kept
    in the process: a retry reaches the replica that holds the MCP session)."""

    answers: dict[str, Any] = field(default_factory=dict)


def retry_key(ctx: Any, name: str, arguments: dict[str, Any]) -> str | None:
    """None when the request has no id (an in-process step): nothing to retry. Request
    ids restart with every MCP session: the key is the session's (a harness connecting
    once per step reuses ids, and its calls must run)."""
    try:
        request_id, mcp_session = ctx.request_id, ctx.session_id
    except RuntimeError:
        return None
    return f"{mcp_session}\0{request_id}\0{name}\0{json.dumps(arguments, sort_keys=True, default=str)}"
