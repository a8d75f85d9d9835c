"""The MCP front door: simroute as an MCP server in front of real MCP servers.

fastmcp's proxy with simroute's middleware (`middleware.py`) routing every
`tools/call`, over stdio (`stdio.py`) or streamable HTTP (`server.py`, guarded by
`http_guard.py`), with simroute's own tool surfaces (`shell_tools.py`,
`browser_tools.py`).

May import: `router.runtime`, `router.engine`, `router.auth`, `router.types`,
`backends`, `shadow`.
"""
