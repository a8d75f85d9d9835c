"""The real MCP side: upstream servers' sessions (`upstream.py`) and their config
entries (`servers.py`)."""
