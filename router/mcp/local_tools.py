"""Tools simroute serves itself (the shell and browser channels).

A local tool is routed exactly like an upstream's tool: the routing middleware
builds the `Call` with the tool's channel and server, and the tool's own
function is the real side (fastmcp runs it as `call_next`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastmcp.tools.base import Tool


@dataclass(frozen=True, slots=True)
class LocalTool:
    tool: Tool
    channel: str  # "shell", "browser": the Call's channel
    server: str  # the Call's server (names the environment in records and rules)
    # A check run before routing, in every mode: (policy, reason) when the arguments are
    # refused (e.g. a browser URL with a non-web scheme), else None. Pure.
    refusal: Callable[[dict[str, Any]], tuple[str, str] | None] | None = None
