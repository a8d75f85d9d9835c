"""Routes every `tools/call` through the engine; everything else passes through.

Listing, resources, prompts, notifications and server-to-client requests are
served by fastmcp's proxy provider over the session's warm upstream, unchanged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

from fastmcp.exceptions import NotFoundError
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from mcp.shared.exceptions import MCPError
from mcp_types import TextContent

from backends.errors import BackendUnavailable
from backends.mcp_upstream import UpstreamError
from router.app import Runtime
from router.mcp.identity import agent_session_id
from router.mcp.local_tools import LocalTool
from router.mcp.provider import SnapshotProxyProvider
from router.mcp.results import observation_from_result, result_from_observation
from router.sessions import SessionLimitError
from router.types import Call, Observation, Provenance

log = logging.getLogger("simroute.mcp")


class ToolNames:
    """Front names <-> (server, upstream tool name). One upstream: names unchanged;
    several: `server_tool`."""

    def __init__(self, servers: Sequence[str]) -> None:
        self.servers = list(servers)
        self.prefixed = len(self.servers) > 1
        # Longest first, so server "a_b" wins over server "a" for "a_b_tool".
        self._by_length = sorted(self.servers, key=len, reverse=True)

    def split(self, name: str) -> tuple[str, str] | None:
        if not self.prefixed:
            return (self.servers[0], name) if self.servers else None
        for server in self._by_length:
            if name.startswith(server + "_") and len(name) > len(server) + 1:
                return server, name[len(server) + 1 :]
        return None


class RoutingMiddleware(Middleware):
    def __init__(
        self,
        runtime: Runtime,
        names: ToolNames,
        providers: Mapping[str, SnapshotProxyProvider],
        local: Mapping[str, LocalTool] | None = None,
    ) -> None:
        self.runtime = runtime
        self.names = names
        self.providers = providers
        # simroute's own tools (shell, browser) by name; they win over an upstream's tool of the same name.
        self.local = dict(local or {})
        self._validators: dict[tuple[str, int], Draft202012Validator | None] = {}

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: CallNext[Any, ToolResult]) -> ToolResult:
        ctx = context.fastmcp_context
        assert ctx is not None
        name = context.message.name
        arguments = dict(context.message.arguments or {})
        local = self.local.get(name)
        if local is not None:
            channel, server, upstream_tool, tool = local.channel, local.server, name, local.tool
        else:
            target = self.names.split(name)
            found = await self._tool(ctx, name, target)
            if target is None or found is None:
                raise NotFoundError(f"Unknown tool: {name!r}")
            channel, (server, upstream_tool), tool = "mcp", target, found

        session_id = agent_session_id(ctx)
        try:
            session = self.runtime.sessions.get(session_id)
        except SessionLimitError as exc:
            return _refusal(str(exc))
        call = Call(channel, server, upstream_tool, arguments, session.id)

        problem = self._schema_problem(name, tool, arguments)
        if problem is not None:
            outcome = self.runtime.engine.reject(call, session, policy="input-schema", reason=problem)
            return result_from_observation(outcome.observation, outcome.record)

        upstream: list[ToolResult] = []  # the real result, relayed as-is when it is what the agent gets

        async def real(call: Call) -> Observation:
            started = time.perf_counter()
            try:
                result = await call_next(context)
            except Exception as exc:
                if (start_failure := _cause_of_type(exc, UpstreamError)) is not None:
                    return Observation.error(f"simroute: {start_failure}", Provenance.NONE, time.perf_counter() - started)
                if (missing := _cause_of_type(exc, BackendUnavailable)) is not None:  # e.g. no Docker engine for the shell
                    return Observation.error(f"simroute: {missing}", Provenance.NONE, time.perf_counter() - started)
                if isinstance(exc, MCPError):  # the upstream answered with a protocol error (e.g. invalid params)
                    return Observation.error(f"upstream {server!r} error: {exc}", Provenance.REAL, time.perf_counter() - started)
                # The upstream broke mid-call: report it, start a new one next time.
                log.warning("upstream %r failed on %r: %r", server, upstream_tool, exc)
                if local is None:
                    await self.runtime.upstreams.discard(session.id, server)
                return Observation.error(
                    f"simroute: upstream {server!r} failed while calling {upstream_tool!r}: {type(exc).__name__}: {exc}",
                    Provenance.NONE,
                    time.perf_counter() - started,
                )
            upstream.append(result)
            return observation_from_result(result, latency_s=time.perf_counter() - started)

        note = self._schema_change_note(server) if local is None else ""
        outcome = await self.runtime.engine.handle(call, session, real, note=note)
        return result_from_observation(outcome.observation, outcome.record, upstream=upstream[0] if upstream else None)

    async def _tool(self, ctx: Any, name: str, target: tuple[str, str] | None) -> Tool | None:
        """The tool's definition, from the proxy provider's listing cache when it is
        fresh (no provider-chain walk on the hot path), else through fastmcp."""
        if target is None:
            return None
        cached = self.providers[target[0]].cached_tool(target[1])
        return cached if cached is not None else await ctx.fastmcp.get_tool(name)

    def _schema_change_note(self, server: str) -> str:
        """Said once, on the first call after an upstream's tool definitions changed."""
        provider = self.providers[server]
        previous, provider.schema_changed_from = provider.schema_changed_from, None
        return f"tool definitions of {server!r} changed since the last snapshot (was {previous})" if previous else ""

    def _schema_problem(self, name: str, tool: Tool, arguments: dict[str, Any]) -> str | None:
        """Why `arguments` fail the tool's input schema, or None. Checked here so that
        simulated and replayed calls are held to the same contract as real ones."""
        schema = tool.parameters or {}
        key = (name, id(schema))
        if key not in self._validators:
            try:
                Draft202012Validator.check_schema(schema)
                self._validators[key] = Draft202012Validator(schema)
            except SchemaError:
                log.warning("tool %r declares an invalid input schema; arguments are not checked", name)
                self._validators[key] = None
        validator = self._validators[key]
        if validator is None:
            return None
        error = next(iter(validator.iter_errors(arguments)), None)
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path) or "arguments"
        return f"invalid arguments for tool {name!r}: {where}: {error.message}"


def _cause_of_type[E: BaseException](exc: BaseException, kind: type[E]) -> E | None:
    """`exc` or the first exception in its cause chain that is a `kind`
    (fastmcp wraps a provider's failure in a ToolError)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _refusal(reason: str) -> ToolResult:
    return ToolResult(
        content=[TextContent(type="text", text=reason)],
        meta={"simroute": {"provenance": "none", "route": "deny", "policy": "sessions", "reason": reason, "record_id": None}},
        is_error=True,
    )
