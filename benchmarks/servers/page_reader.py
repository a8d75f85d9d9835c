"""A fetch-style server: `fetch(url)` GETs a page over HTTP (httpx) and answers its text.

Run: python benchmarks/servers/page_reader.py  (stdio)
"""

from __future__ import annotations

import httpx2 as httpx
from fastmcp import FastMCP
from mcp_types import ToolAnnotations

mcp = FastMCP("pages")


@mcp.tool(output_schema=None, annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=True))
def fetch(url: str) -> str:
    """The text of the page at `url` (an HTTP GET)."""
    response = httpx.get(url, timeout=10, follow_redirects=True, trust_env=False)
    response.raise_for_status()
    return response.text


if __name__ == "__main__":
    mcp.run(show_banner=False)
