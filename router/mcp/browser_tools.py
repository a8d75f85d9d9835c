"""The browser channel's tool surface on simroute's MCP endpoint, with
playwright-mcp's names and argument shapes (agents written for it work unchanged):
browser_navigate, browser_snapshot, browser_click, browser_type,
browser_press_key, browser_navigate_back, browser_close.

Each tool function is the real side (the session's Chromium context); the
routing middleware decides per call whether it runs or the Web world model
answers instead, with an observation of the same shape: the page URL, title
and accessibility snapshot with element refs, as text, and as structured
content `{url, title, snapshot, truncated[, error][, events]}`.
"""

# No `from __future__ import annotations`: the tool signatures below are read at run time.

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastmcp.server.dependencies import get_context
from fastmcp.tools.base import Tool, ToolResult
from mcp_types import TextContent, ToolAnnotations
from pydantic import Field

from backends.browser.page_state import PageState, scheme_refusal
from backends.browser.pool import BrowserPool
from router.mcp.identity import agent_session_id
from router.mcp.local_tools import LocalTool
from router.mcp.results import own_answer_meta

CHANNEL = "browser"

Ref = Annotated[str, Field(min_length=1, description="Exact target element reference from the page snapshot")]
Element = Annotated[
    str | None,
    Field(description="Human-readable element description used to obtain permission to interact with the element"),
]


def result_of(state: PageState) -> ToolResult:
    """The tool result for a page state; an error with no page (an unknown ref) is text only;
    simroute's own refusal (an address policy) is marked so (provenance `none`)."""
    structured = None if state.snapshot is None and state.url is None and state.is_error else state.structured()
    return ToolResult(
        content=[TextContent(type="text", text=state.text())],
        structured_content=structured,
        is_error=state.is_error,
        meta=own_answer_meta() if state.refused else None,
    )


def browser_tools(pool: BrowserPool) -> list[LocalTool]:
    async def act(action: str, **arguments: Any) -> ToolResult:
        return result_of(await pool.act(agent_session_id(get_context()), action, **arguments))

    async def browser_navigate(
        url: Annotated[str, Field(min_length=1, description="The URL to navigate to")],
    ) -> ToolResult:
        return await act("navigate", url=url)

    async def browser_snapshot() -> ToolResult:
        return await act("snapshot")

    async def browser_click(ref: Ref, element: Element = None) -> ToolResult:
        return await act("click", ref=ref, element=element)

    async def browser_type(
        ref: Ref,
        text: Annotated[str, Field(description="Text to type into the element")],
        submit: Annotated[bool | None, Field(description="Whether to submit entered text (press Enter after)")] = None,
        element: Element = None,
    ) -> ToolResult:
        return await act("type", ref=ref, text=text, submit=bool(submit), element=element)

    async def browser_press_key(
        key: Annotated[
            str,
            Field(
                min_length=1,
                description="Name of the key to press or a character to generate, such as `ArrowLeft` or `a`",
            ),
        ],
    ) -> ToolResult:
        return await act("press_key", key=key)

    async def browser_navigate_back() -> ToolResult:
        return await act("navigate_back")

    async def browser_close() -> ToolResult:
        return await act("close")

    definitions: list[tuple[Callable[..., Awaitable[ToolResult]], str, str, dict[str, bool]]] = [
        (browser_navigate, "Navigate to a URL", "Navigate to a URL", dict(read_only_hint=False)),
        (
            browser_snapshot,
            "Page snapshot",
            "Capture accessibility snapshot of the current page, this is better than screenshot",
            dict(read_only_hint=True),
        ),
        (browser_click, "Click", "Perform click on a web page", dict(read_only_hint=False)),
        (browser_type, "Type text", "Type text into editable element", dict(read_only_hint=False)),
        (browser_press_key, "Press a key", "Press a key on the keyboard", dict(read_only_hint=False)),
        (browser_navigate_back, "Go back", "Go back to the previous page in the history", dict(read_only_hint=False)),
        (browser_close, "Close browser", "Close the page", dict(read_only_hint=False, destructive_hint=True)),
    ]
    tools = []
    for function, title, description, hints in definitions:
        tool = Tool.from_function(
            function,
            name=function.__name__,
            description=description,
            annotations=ToolAnnotations(title=title, open_world_hint=True, **{"destructive_hint": False, **hints}),
            output_schema=None,  # text first, as playwright-mcp; structured content is a bonus
        )
        tools.append(
            LocalTool(
                tool, channel=CHANNEL, server=CHANNEL, refusal=_url_refusal if function is browser_navigate else None
            )
        )
    return tools


def _url_refusal(arguments: dict[str, Any]) -> tuple[str, str] | None:
    """Non-web schemes are refused before routing: neither Chromium nor the world model sees them."""
    url = arguments.get("url")
    reason = scheme_refusal(url) if isinstance(url, str) else None
    return ("browser-url", reason) if reason else None
