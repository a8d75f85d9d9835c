"""The MCP front door: simroute as an MCP server in front of real MCP servers.

fastmcp's proxy with simroute's middleware (`middleware.py`) routing every
`tools/call`, over stdio (`stdio.py`) or streamable HTTP (`server.py`, guarded by
`http_guard.py`), with simroute's own tool surfaces (`shell_tools.py`,
`browser_tools.py`).

It is handed the parts it routes with (`McpParts`, router/runtime/parts.py), never
the `Runtime` that assembles them (tests/unit/router/test_front_doors_get_parts.py). An
episode's step taken in process (`in_process.py`) gets the same per-call work as the
wire's `tools/call` (`tool_calls.py`), and its record back as a value.

May import: `router.runtime` (its parts, never `Runtime`), `router.engine`,
`router.auth`, `calls`, `backends`, `records`.
"""
