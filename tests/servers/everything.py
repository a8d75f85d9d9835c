"""An MCP server with every feature a proxy must pass through, written with the Python
SDK's low-level server API (no framework rewriting its answers): paginated tools,
resources, templates and prompts (two per page, opaque cursors), completions, resource
subscriptions that send `notifications/resources/updated`, a tool schema with `$defs`,
`$ref`, an `outputSchema` and annotations, logging at every level (after
`logging/setLevel`), progress when the caller asked for it, list-changed notifications
and the reason of the last cancellation it received.

Run: python tests/servers/everything.py  (stdio)
     python tests/servers/everything.py --http PORT  (streamable HTTP on 127.0.0.1:PORT/mcp)
"""

from __future__ import annotations

import base64
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.lowlevel.server import NotificationOptions

PAGE = 2
LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]

TYPED_INPUT = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "Point": {
            "type": "object",
            "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
            "required": ["x", "y"],
        },
        "Label": {"type": "string", "minLength": 1, "description": "A name for the path."},
    },
    "properties": {
        "points": {"type": "array", "items": {"$ref": "#/$defs/Point"}, "minItems": 1},
        "label": {"$ref": "#/$defs/Label"},
    },
    "required": ["points"],
    "additionalProperties": False,
}
TYPED_OUTPUT = {
    "type": "object",
    "$defs": {"Length": {"type": "number", "minimum": 0}},
    "properties": {"length": {"$ref": "#/$defs/Length"}, "label": {"type": "string"}},
    "required": ["length"],
}
TOOLS = [
    types.Tool(
        name="echo",
        description="Echo the text back.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    ),
    types.Tool(
        name="path_length",
        title="Path length",
        description="The length of a path through points.",
        input_schema=TYPED_INPUT,
        output_schema=TYPED_OUTPUT,
        annotations=types.ToolAnnotations(
            title="Measure a path", read_only_hint=True, idempotent_hint=True, open_world_hint=False
        ),
        meta={"example.com/owner": "geometry"},
    ),
    types.Tool(
        name="log_levels",
        description="Log one message at every level.",
        input_schema={"type": "object", "properties": {}},
    ),
    types.Tool(
        name="count",
        description="Report progress n times.",
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
    ),
    types.Tool(
        name="touch",
        description="Change a resource (subscribers are told).",
        input_schema={"type": "object", "properties": {"uri": {"type": "string"}}},
    ),
    types.Tool(
        name="change_lists",
        description="Say the tools, resources and prompts changed.",
        input_schema={"type": "object", "properties": {}},
    ),
    types.Tool(name="wait", description="Wait to be cancelled.", input_schema={"type": "object", "properties": {}}),
    types.Tool(
        name="last_cancel",
        description="The reason of the last cancellation received.",
        input_schema={"type": "object", "properties": {}},
    ),
    types.Tool(
        name="request_meta",
        description="The `_meta` of this call's request.",
        input_schema={"type": "object", "properties": {}},
    ),
]
RESOURCES = [
    types.Resource(uri=f"note://{name}", name=name, mime_type="text/plain", description=f"The {name} note.")
    for name in ("alpha", "beta", "gamma")
]
TEMPLATES = [
    types.ResourceTemplate(uri_template="note://{name}", name="note", description="A note by name."),
    types.ResourceTemplate(uri_template="color://{shade}", name="color", mime_type="text/plain"),
]
PROMPTS = [
    types.Prompt(
        name=name,
        description=f"The {name} prompt.",
        arguments=[types.PromptArgument(name="language", description="A programming language.", required=True)],
    )
    for name in ("review", "explain", "summarize")
]
LANGUAGES = ["python", "pascal", "perl", "rust", "ruby"]


def page[T](items: list[T], cursor: str | None) -> tuple[list[T], str | None]:
    start = int(base64.b64decode(cursor).decode()) if cursor else 0
    end = start + PAGE
    return items[start:end], base64.b64encode(str(end).encode()).decode() if end < len(items) else None


class Everything:
    def __init__(self) -> None:
        self.level: str | None = None  # none set: every level is sent
        self.subscribed: set[str] = set()
        self.last_cancel: str = "none"

    async def list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools, cursor = page(TOOLS, params.cursor if params else None)
        return types.ListToolsResult(tools=tools, next_cursor=cursor)

    async def list_resources(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        resources, cursor = page(RESOURCES, params.cursor if params else None)
        return types.ListResourcesResult(resources=resources, next_cursor=cursor)

    async def list_templates(
        self, ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates, cursor = page(TEMPLATES, params.cursor if params else None)
        return types.ListResourceTemplatesResult(resource_templates=templates, next_cursor=cursor)

    async def list_prompts(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        prompts, cursor = page(PROMPTS, params.cursor if params else None)
        return types.ListPromptsResult(prompts=prompts, next_cursor=cursor)

    async def read(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        text = f"contents of {params.uri}"
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=str(params.uri), text=text, mime_type="text/plain")]
        )

    async def get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        language = (params.arguments or {}).get("language", "?")
        message = types.PromptMessage(
            role="user", content=types.TextContent(type="text", text=f"{params.name} this {language} code")
        )
        return types.GetPromptResult(
            description=f"{params.name} in {language}", messages=[message], meta={"example.com/prompt": 1}
        )

    async def complete(self, ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        prefix = params.argument.value
        if isinstance(params.ref, types.PromptReference) and params.argument.name == "language":
            values = [language for language in LANGUAGES if language.startswith(prefix)]
        elif isinstance(params.ref, types.ResourceTemplateReference) and params.argument.name == "shade":
            values = [shade for shade in ("red", "rose", "ruby", "blue") if shade.startswith(prefix)]
        else:
            values = []
        return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))

    async def subscribe(self, ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        self.subscribed.add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(self, ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        self.subscribed.discard(str(params.uri))
        return types.EmptyResult()

    async def set_level(self, ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        self.level = params.level
        return types.EmptyResult()

    async def cancelled(self, ctx: Any, params: types.CancelledNotificationParams) -> None:
        self.last_cancel = params.reason if params.reason is not None else "(no reason)"

    async def call(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments or {}
        name = params.name
        if name == "echo":
            return text(str(arguments.get("text", "")), meta={"example.com/echoed": True})
        if name == "path_length":
            points = arguments["points"]
            length = sum(
                ((b["x"] - a["x"]) ** 2 + (b["y"] - a["y"]) ** 2) ** 0.5
                for a, b in zip(points, points[1:], strict=False)
            )
            structured = {"length": length, "label": arguments.get("label", "")}
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=str(length))], structured_content=structured
            )
        if name == "log_levels":
            first = LEVELS.index(self.level) if self.level else 0
            for level in LEVELS[first:]:
                data = {"level": level, "detail": [1, 2]} if level == "error" else f"a {level} message"
                await ctx.session.send_log_message(level, data, logger="everything", related_request_id=ctx.request_id)
            return text(f"logged from {LEVELS[first]}")
        if name == "count":
            n = int(arguments.get("n", 3))
            for i in range(n):
                await ctx.session.report_progress(i + 1, n, f"step {i + 1}")
            return text(f"counted {n}")
        if name == "touch":
            uri = str(arguments["uri"])
            if uri in self.subscribed:
                await ctx.session.send_resource_updated(uri)
            return text(f"touched {uri}")
        if name == "change_lists":
            await ctx.session.send_tool_list_changed()
            await ctx.session.send_resource_list_changed()
            await ctx.session.send_prompt_list_changed()
            return text("changed")
        if name == "wait":
            await anyio.sleep(60)
            return text("not cancelled")
        if name == "last_cancel":
            return text(self.last_cancel)
        if name == "request_meta":
            return types.CallToolResult(content=[], structured_content={"meta": dict(ctx.meta or {})})
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"Unknown tool: {name}")], is_error=True
        )


def text(value: str, *, meta: dict[str, Any] | None = None) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)], meta=meta)


class EverythingServer(Server):
    def create_initialization_options(
        self, notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
    ) -> Any:
        # Its lists change (change_lists): say so on every transport.
        every_list = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
        return super().create_initialization_options(notification_options or every_list, *args, **kwargs)


def build() -> Server:
    everything = Everything()
    server = EverythingServer(
        "everything",
        version="1.2.3",
        instructions="A test server with every feature.",
        on_list_tools=everything.list_tools,
        on_call_tool=everything.call,
        on_list_resources=everything.list_resources,
        on_list_resource_templates=everything.list_templates,
        on_read_resource=everything.read,
        on_subscribe_resource=everything.subscribe,
        on_unsubscribe_resource=everything.unsubscribe,
        on_list_prompts=everything.list_prompts,
        on_get_prompt=everything.get_prompt,
        on_completion=everything.complete,
    )
    # Registered after construction: the constructor's logging argument warns (deprecated in the 2026 era).
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, everything.set_level)
    server.add_notification_handler("notifications/cancelled", types.CancelledNotificationParams, everything.cancelled)
    return server


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = build()
    options = server.create_initialization_options()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


def serve_http(port: int) -> None:
    import uvicorn

    app = build().streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        serve_http(int(sys.argv[2]))
    else:
        anyio.run(serve_stdio)
