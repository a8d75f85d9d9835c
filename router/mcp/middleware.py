"""Routes every `resources/read` and `prompts/get` through the engine, and any
`tools/call` fastmcp dispatches (`FastMCP.call_tool` with its middleware: the wire's
own `tools/call` is router/mcp/call_handler.py's, an episode's step taken in process
router/mcp/in_process.py's, and fastmcp middleware sees neither); everything else
passes through. A call's own work is router/mcp/tool_calls.py's.

Listings are router/mcp/listings.py's, the other requests router/mcp/passthrough.py's;
the upstreams' notifications reach the agent through router/mcp/relay.py (which this
middleware tells what it forwards), and their requests to the client (sampling,
elicitation, roots) through fastmcp's proxy client, over the session's warm upstream.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import mcp_types
from fastmcp.exceptions import NotFoundError, PromptError, ResourceError
from fastmcp.prompts.base import PromptResult
from fastmcp.resources.base import ResourceResult
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult

from calls import Call, Observation, Provenance
from router.addons.tracing import annotate_current
from router.mcp.episode_front_door import EpisodeFrontDoor
from router.mcp.identity import agent_session_id
from router.mcp.names import ToolNames
from router.mcp.reads import (
    GET_PROMPT,
    READ_RESOURCE,
    observation_of_prompt,
    observation_of_resource,
    prompt_result,
    resource_result,
    server_of_uri,
)
from router.mcp.results import call_result_of, simroute_meta
from router.mcp.tool_calls import Routed, ToolCalls
from router.runtime.parts import McpParts

log = logging.getLogger("simroute.mcp")


class RoutingMiddleware(Middleware):
    def __init__(self, parts: McpParts, names: ToolNames, calls: ToolCalls) -> None:
        self.parts = parts
        self.names = names
        self.calls = calls
        self.relay = calls.relay

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: CallNext[Any, ToolResult]) -> ToolResult:
        """A `tools/call` fastmcp dispatches (none of simroute's own paths: they are
        router/mcp/call_handler.py's and in_process.py's); its real side is fastmcp's tool."""
        ctx = context.fastmcp_context
        assert ctx is not None

        async def send() -> mcp_types.CallToolResult:
            return call_result_of(await call_next(context))

        result = await self.calls.call(ctx, context.message.name, dict(context.message.arguments or {}), send)
        return ToolResult.from_mcp_result(result)

    async def on_list_tools(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Sequence[Tool]]
    ) -> Sequence[Tool]:
        """An episode lists the tools of its channels and servers only."""
        await self.parts.pins.refresh()  # a change accepted elsewhere is listed as accepted
        tools = await call_next(context)
        ctx = context.fastmcp_context
        session = self.parts.sessions.find(agent_session_id(ctx)) if ctx is not None else None
        scope = session.episode.scope if session is not None and session.episode is not None else None
        front_door = session.find(EpisodeFrontDoor) if session is not None else None
        own = list(front_door.tools()) if front_door is not None else []  # an episode's http_request
        if scope is None:
            return [*tools, *own]
        return [tool for tool in tools if self._environment_of(tool.name) in scope] + own

    def _environment_of(self, name: str) -> tuple[str, str]:
        target = self.calls.target(name)
        return target.channel, target.server

    # --- resources/read and prompts/get ---------------------------------------------------

    async def on_read_resource(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, ResourceResult]
    ) -> ResourceResult:
        uri = str(context.message.uri)
        target = server_of_uri(uri, self.names.servers, prefixed=self.names.prefixed)
        server = target[0] if target is not None else "unknown"
        outcome, upstream = await self._routed_read(
            context, call_next, server, READ_RESOURCE, {"uri": uri}, observation_of_resource
        )
        if outcome.observation.is_error:
            raise ResourceError(outcome.observation.text)
        if upstream:
            return ResourceResult(
                upstream[0].contents, meta={**(upstream[0].meta or {}), "simroute": simroute_meta(outcome.record)}
            )
        return resource_result(outcome.observation, {"simroute": simroute_meta(outcome.record)})

    async def on_get_prompt(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, PromptResult]
    ) -> PromptResult:
        name = context.message.name
        target = self.names.split(name)
        server, prompt = target if target is not None else ("unknown", name)
        arguments = {"name": prompt, "arguments": dict(context.message.arguments or {})}
        outcome, upstream = await self._routed_read(
            context, call_next, server, GET_PROMPT, arguments, observation_of_prompt
        )
        if outcome.observation.is_error:
            raise PromptError(outcome.observation.text)
        if upstream:
            found = upstream[0]
            return PromptResult(
                found.messages,
                description=found.description,
                meta={**(found.meta or {}), "simroute": simroute_meta(outcome.record)},
            )
        return prompt_result(outcome.observation, {"simroute": simroute_meta(outcome.record)})

    async def _routed_read(
        self,
        context: MiddlewareContext[Any],
        call_next: CallNext[Any, Any],
        server: str,
        tool: str,
        arguments: dict[str, Any],
        observe,
    ):
        """A resource read or prompt fetch through the engine: (outcome, the upstream's
        own result when the agent is served it)."""
        ctx = context.fastmcp_context
        assert ctx is not None
        call = Call("mcp", server, tool, arguments, "")
        session = await self.calls.session(agent_session_id(ctx), call)
        if isinstance(session, Routed):
            raise (ResourceError if tool == READ_RESOURCE else PromptError)(session.result.content[0].text)  # type: ignore[union-attr]
        call = Call("mcp", server, tool, arguments, session.id)
        upstream: list[Any] = []

        async def real(call: Call) -> Observation:
            started = time.perf_counter()
            try:
                with self.relay.forwarding(session.id, server, ctx):
                    result = await call_next(context)
            except (ResourceError, PromptError, NotFoundError) as exc:  # the upstream's own refusal
                return Observation.error(f"upstream {server!r}: {exc}", Provenance.REAL, time.perf_counter() - started)
            except Exception as exc:  # noqa: BLE001 -- the real side's boundary: whatever the upstream raised becomes an error observation (_real_failure)
                return await self.calls.real_failure(exc, call, True, session.id, time.perf_counter() - started)
            upstream.append(result)
            return observe(result, latency_s=time.perf_counter() - started)

        # Reading changes nothing: no write-ahead record.
        outcome = await self.parts.engine.handle(call, session, real, read_only=True)
        if self.parts.tracing:  # the target: the resource's URI, the prompt's name
            annotate_current(
                outcome.record, method=tool, target=arguments.get("uri") or arguments.get("name") or server
            )
        return (
            outcome,
            upstream if outcome.observation.provenance is Provenance.REAL and not outcome.observation.is_error else [],
        )
