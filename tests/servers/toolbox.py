"""A small MCP server for fault and pass-through tests: it hangs, crashes,
reports progress, asks the client questions, and has resources and prompts.

Run: python tests/servers/toolbox.py  (stdio)
"""

import asyncio
import os
import sys

from fastmcp import Context, FastMCP

mcp = FastMCP("toolbox")


@mcp.tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@mcp.tool
async def sleep(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@mcp.tool
def crash() -> str:
    """Kill this server process."""
    os._exit(3)


@mcp.tool
async def count_up(n: int, ctx: Context) -> str:
    """Report progress n times."""
    for i in range(n):
        await ctx.report_progress(i + 1, n)
    return f"counted {n}"


@mcp.tool
async def ask_name(ctx: Context) -> str:
    """Ask the client for a name (elicitation)."""
    result = await ctx.elicit("What is your name?", response_type=str)
    return f"hello {getattr(result, 'data', None)} ({result.action})"


@mcp.tool
def fail(message: str) -> str:
    """Raise a tool error."""
    raise ValueError(message)


if os.environ.get("TOOLBOX_EXTRA_TOOL"):

    @mcp.tool
    def extra(value: int) -> int:
        """A tool that exists only when TOOLBOX_EXTRA_TOOL is set (a changed schema)."""
        return value


@mcp.resource("note://greeting")
def greeting() -> str:
    return "hello from a resource"


@mcp.prompt
def summarize(topic: str) -> str:
    return f"Summarize {topic} in one line."


if __name__ == "__main__":
    print("toolbox: starting", file=sys.stderr)
    mcp.run(show_banner=False)
