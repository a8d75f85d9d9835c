"""A small MCP server for fault and pass-through tests: it hangs, crashes,
reports progress, asks the client questions, and has resources and prompts.

Run: python tests/servers/toolbox.py  (stdio)
     python tests/servers/toolbox.py --http PORT  (streamable HTTP on 127.0.0.1:PORT/mcp)
"""

import asyncio
import os
import sys

from fastmcp import Context, FastMCP
from mcp_types import ToolAnnotations

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
async def wait_for_cancel(marker: str) -> str:
    """Sleep until cancelled; a cancellation is written to the `marker` file."""
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        with open(marker, "w") as out:
            out.write("cancelled")
        raise
    return "not cancelled"


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
async def ask_model(question: str, ctx: Context) -> str:
    """Ask the client's model (sampling)."""
    from mcp_types import SamplingMessage, TextContent

    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text=question))], max_tokens=20
    )
    return f"model said: {result.content.text}"


@mcp.tool
async def roots(ctx: Context) -> str:
    """List the client's roots."""
    listed = await ctx.session.list_roots()
    return ",".join(str(root.uri) for root in listed.roots)


@mcp.tool
async def announce_tools_changed(ctx: Context) -> str:
    """Send notifications/tools/list_changed."""
    await ctx.session.send_tool_list_changed()
    return "announced"


@mcp.tool(annotations=ToolAnnotations(destructiveHint=True, readOnlyHint=False))
def tidy_note(path: str) -> str:
    """Tidy up a note file (it is removed)."""
    os.remove(path)
    return f"tidied {path}"


@mcp.tool
def fail(message: str) -> str:
    """Raise a tool error."""
    raise ValueError(message)


if os.environ.get("TOOLBOX_EXTRA_TOOL"):

    @mcp.tool
    def extra(value: int) -> int:
        """A tool that exists only when TOOLBOX_EXTRA_TOOL is set (a changed schema)."""
        return value


@mcp.tool
def next_ticket() -> str:
    """Issue the next ticket number: state that outlives the process when
    TOOLBOX_TICKETS names a file (a stateful upstream, like a real ticket system)."""
    path = os.environ.get("TOOLBOX_TICKETS")
    if not path:
        raise ValueError("TOOLBOX_TICKETS is not set")
    try:
        number = int(open(path).read() or 0) + 1
    except FileNotFoundError:
        number = 1
    with open(path, "w") as counter:
        counter.write(str(number))
    return f"ticket {number}"


def _balance_file() -> str:
    path = os.environ.get("TOOLBOX_BALANCE")
    if not path:
        raise ValueError("TOOLBOX_BALANCE is not set")
    return path


def _balance() -> int:
    try:
        return int(open(_balance_file()).read() or 0)
    except FileNotFoundError:
        return 0


@mcp.tool(output_schema=None)
def add_funds(amount: int) -> str:
    """Add to the account's balance: state kept in the TOOLBOX_BALANCE file, so that
    every toolbox process (one per router replica) shares the account."""
    balance = _balance() + amount
    with open(_balance_file(), "w") as out:
        out.write(str(balance))
    return f"added {amount}"


@mcp.tool(output_schema=None, annotations=ToolAnnotations(readOnlyHint=True))
def get_balance() -> str:
    """The account's balance (reads only)."""
    return f"balance {_balance()}"


@mcp.tool
def get_motto() -> str:
    """The house motto (the same answer every time)."""
    return "Festina lente: make haste slowly."


_visits = 0


@mcp.tool
def get_visits() -> str:
    """How many times this has been read (a counter: every answer differs). The count
    outlives the process when TOOLBOX_VISITS names a file (a service's counter)."""
    global _visits
    path = os.environ.get("TOOLBOX_VISITS")
    if path and os.path.exists(path):
        _visits = int(open(path).read() or 0)
    _visits += 1
    if path:
        with open(path, "w") as counter:
            counter.write(str(_visits))
    return f"visit number {_visits}"


if os.environ.get("TOOLBOX_HANG_LISTINGS"):
    from fastmcp.server.middleware import Middleware

    class HangListings(Middleware):
        """tools/list never answers (an upstream stuck in its listing)."""

        async def on_list_tools(self, context, call_next):
            await asyncio.sleep(3600)

    mcp.add_middleware(HangListings())


if os.environ.get("TOOLBOX_HANG_RESOURCE_LISTINGS"):
    from fastmcp.server.middleware import Middleware

    class HangResourceListings(Middleware):
        """resources/list and prompts/list never answer (tools/list does)."""

        async def on_list_resources(self, context, call_next):
            await asyncio.sleep(3600)

        async def on_list_prompts(self, context, call_next):
            await asyncio.sleep(3600)

    mcp.add_middleware(HangResourceListings())


@mcp.resource("note://greeting")
def greeting() -> str:
    return "hello from a resource"


@mcp.prompt
def summarize(topic: str) -> str:
    return f"Summarize {topic} in one line."


if __name__ == "__main__":
    print("toolbox: starting", file=sys.stderr)
    if sys.argv[1:2] == ["--http"]:  # a remote upstream: one process every agent session shares
        mcp.run(transport="http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False)
    else:
        mcp.run(show_banner=False)
