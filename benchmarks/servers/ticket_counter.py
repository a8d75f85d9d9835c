"""A ticket counter, as a real ticket service keeps one: its state lives in a JSON
file named by TICKET_COUNTER_STATE, so it persists across sessions (and across the
server's processes). `next_ticket` issues a number (a write, not repeatable without
effect), `current_ticket` reads the last one issued, `server_version` answers a
constant.

Run: TICKET_COUNTER_STATE=/tmp/tickets.json python benchmarks/servers/ticket_counter.py  (stdio)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from fastmcp import FastMCP
from mcp_types import ToolAnnotations

VERSION = "ticket-counter 3.2.0 (build 5120, json-file backend)"
READS = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
ISSUES = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)

mcp = FastMCP("tickets")


def _state_file() -> Path:
    path = os.environ.get("TICKET_COUNTER_STATE")
    if not path:
        raise ValueError("TICKET_COUNTER_STATE is not set")
    return Path(path)


def _current() -> int:
    try:
        return int(json.loads(_state_file().read_text())["current"])
    except FileNotFoundError:
        return 0


@mcp.tool(output_schema=None, annotations=ISSUES)
def next_ticket() -> str:
    """Issue the next ticket; answers its number."""
    number = _current() + 1
    state = _state_file()
    partial = state.with_suffix(".partial")
    partial.write_text(json.dumps({"current": number}))
    partial.replace(state)
    return f"ticket {number}"


@mcp.tool(output_schema=None, annotations=READS)
def current_ticket() -> str:
    """The number of the last ticket issued (0 before the first)."""
    return f"current ticket {_current()}"


@mcp.tool(output_schema=None, annotations=READS)
def server_version() -> str:
    """The counter's version."""
    return VERSION


if __name__ == "__main__":
    mcp.run(show_banner=False)
