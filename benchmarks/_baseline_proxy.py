"""The baseline proxies for mcp_overhead.py: a minimal fastmcp proxy in front of
mcp-server-time, over stdio or streamable HTTP.

--mode config: `create_proxy(config)` exactly as fastmcp's docs show it.
--mode warm:   `create_proxy(client)` with one already-connected client, so every
               request reuses one warm upstream session (the fairest baseline for
               a router that keeps upstream sessions warm).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.server import create_proxy

UPSTREAM = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=["config", "warm"], default="config")
    parser.add_argument("--http")
    options = parser.parse_args()

    async def serve(proxy) -> None:
        if options.http:
            host, port = options.http.rsplit(":", 1)
            await proxy.run_async(transport="http", host=host, port=int(port), show_banner=False, log_level="WARNING")
        else:
            await proxy.run_async(show_banner=False, log_level="WARNING")

    if options.mode == "config":
        await serve(create_proxy({"mcpServers": {"time": UPSTREAM}}))
        return
    async with Client(StdioTransport(UPSTREAM["command"], UPSTREAM["args"])) as upstream:
        await serve(create_proxy(upstream))


if __name__ == "__main__":
    asyncio.run(main())
