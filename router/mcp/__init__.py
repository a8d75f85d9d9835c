"""The MCP front door: simroute as an MCP server in front of real MCP servers."""
