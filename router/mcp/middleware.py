"""Routes every `tools/call`, `resources/read` and `prompts/get` through the engine;
everything else passes through.

Listings are router/mcp/listings.py's, the other requests router/mcp/passthrough.py's;
the upstreams' notifications reach the agent through router/mcp/relay.py (which this
middleware tells what it forwards), and their requests to the client (sampling,
elicitation, roots) through fastmcp's proxy client, over the session's warm upstream.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastmcp.exceptions import NotFoundError, PromptError, ResourceError
from fastmcp.prompts.base import PromptResult
from fastmcp.resources.base import ResourceResult
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from mcp.shared.exceptions import MCPError

from backends.errors import BackendUnavailable
from backends.mcp.upstream import UpstreamError
from router.addons.tracing import annotate_current
from router.engine.sessions import SessionRefusedError
from router.mcp.idempotency import IdempotencyError, IdempotencyLost, answered_once_by_key, idempotency_key_of
from router.mcp.identity import agent_session_id
from router.mcp.local_tools import LocalTool
from router.mcp.names import ToolNames
from router.mcp.provider import SnapshotProxyProvider
from router.mcp.reads import (
    GET_PROMPT,
    READ_RESOURCE,
    observation_of_prompt,
    observation_of_resource,
    prompt_result,
    resource_result,
    server_of_uri,
)
from router.mcp.relay import FrontRelay
from router.mcp.results import observation_from_result, result_from_observation, result_json, result_of_json, simroute_meta
from router.mcp.retries import RetriedRequests, answered_once, retry_key
from router.mcp.virtual_provider import VirtualProvider
from router.runtime.runtime import Runtime
from router.types import Call, Observation, Provenance, Session

log = logging.getLogger("simroute.mcp")


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """What routing needs of a tool: its input schema and whether it is read-only."""

    input_schema: dict[str, Any]
    read_only: bool

    @classmethod
    def of_tool(cls, tool: Tool) -> ToolDefinition:
        annotations = tool.annotations
        return cls(tool.parameters or {}, bool(annotations is not None and annotations.read_only_hint))

    @classmethod
    def of_snapshot(cls, definition: dict[str, Any]) -> ToolDefinition:
        return cls(definition.get("inputSchema") or {}, bool((definition.get("annotations") or {}).get("readOnlyHint")))


class RoutingMiddleware(Middleware):
    def __init__(
        self,
        runtime: Runtime,
        names: ToolNames,
        providers: Mapping[str, SnapshotProxyProvider | VirtualProvider],
        local: Mapping[str, LocalTool] | None = None,
        *,
        relay: FrontRelay | None = None,
    ) -> None:
        self.runtime = runtime
        self.relay = relay or FrontRelay(prefixed=names.prefixed)  # the upstreams' notifications, during the calls forwarded
        self.names = names
        self.providers = providers
        # simroute's own tools (shell, browser) by name; they win over an upstream's tool of the same name.
        self.local = dict(local or {})
        self.once = answered_once_by_key(runtime)
        # (tool name, id of its schema) -> (the schema, kept so its id stays unique; its validator)
        self._validators: dict[tuple[str, int], tuple[dict[str, Any], Draft202012Validator | None]] = {}

    # --- tools/call ------------------------------------------------------------------------

    def _target(self, name: str) -> tuple[LocalTool | None, tuple[str, str] | None, str, str, str]:
        """(the local tool, (server, upstream tool) when known, channel, server, upstream tool)."""
        local = self.local.get(name)
        target = (local.server, name) if local is not None else self.names.split(name)
        channel = local.channel if local is not None else "mcp"
        server, upstream_tool = target if target is not None else ("unknown", name)
        return local, target, channel, server, upstream_tool

    async def on_call_tool(self, context: MiddlewareContext[Any], call_next: CallNext[Any, ToolResult]) -> ToolResult:
        ctx = context.fastmcp_context
        assert ctx is not None
        name = context.message.name
        arguments = dict(context.message.arguments or {})
        _, _, channel, server, upstream_tool = self._target(name)
        session = await self._session(agent_session_id(ctx), Call(channel, server, upstream_tool, arguments, ""))
        if isinstance(session, ToolResult):
            return session
        key = idempotency_key_of(ctx)
        if key is not None:  # answered once on any replica (idempotency.py)
            return await self._once_by_key(key, context, call_next, session)
        if session.is_episode:  # a retried request is answered once
            return await answered_once(
                session.slice(RetriedRequests).answers,
                retry_key(ctx, name, arguments),
                lambda: self._call_tool(context, call_next, session),
            )
        return await self._call_tool(context, call_next, session)

    async def _once_by_key(
        self, key: str, context: MiddlewareContext[Any], call_next: CallNext[Any, ToolResult], session: Session
    ) -> ToolResult:
        name, arguments = context.message.name, dict(context.message.arguments or {})

        async def produce() -> dict[str, Any]:
            return result_json(await self._call_tool(context, call_next, session))

        try:
            return result_of_json(await self.once.run(session, key, {"tool": name, "arguments": arguments}, produce))
        except (IdempotencyError, IdempotencyLost) as exc:  # refused, or lost with its replica: recorded, provenance none
            _, _, channel, server, upstream_tool = self._target(name)
            call = Call(channel, server, upstream_tool, arguments, session.id)
            outcome = await self.runtime.engine.reject(call, session, policy="idempotency", reason=str(exc))
            return result_from_observation(outcome.observation, outcome.record)

    async def _call_tool(self, context: MiddlewareContext[Any], call_next: CallNext[Any, ToolResult], session: Session) -> ToolResult:
        ctx = context.fastmcp_context
        assert ctx is not None
        name = context.message.name
        arguments = dict(context.message.arguments or {})
        local, target, channel, server, upstream_tool = self._target(name)
        call = Call(channel, server, upstream_tool, arguments, session.id)
        scope = session.episode.scope if session.episode is not None else None  # an episode's channels and servers
        in_scope = scope is None or (channel, server) in scope
        if in_scope and local is None and target is not None:
            await self._pins_current(server)
        definition = None
        if in_scope:
            definition = ToolDefinition.of_tool(local.tool) if local is not None else await self._definition(ctx, name, target)
        unlisted = self.providers[server].listing_error if definition is None and in_scope and local is None and target else None
        if unlisted is not None:  # not the agent's mistake: the server could not say what its tools are
            reason = f"simroute: upstream {server!r} could not list its tools ({unlisted}), so {name!r} was not called; try again"
            outcome = await self.runtime.engine.reject(call, session, policy="upstream-listing", reason=reason)
            return result_from_observation(outcome.observation, outcome.record)
        if definition is None:
            await self.runtime.engine.reject(call, session, policy="unknown-tool", reason=f"Unknown tool: {name!r}")
            raise NotFoundError(f"Unknown tool: {name!r}")

        problem = self._schema_problem(name, definition.input_schema, arguments)
        refused = (
            ("input-schema", problem)
            if problem is not None
            else (local.refusal(arguments) if local is not None and local.refusal else None)
        )
        if refused is not None:
            outcome = await self.runtime.engine.reject(call, session, policy=refused[0], reason=refused[1])
            return result_from_observation(outcome.observation, outcome.record)

        upstream: list[ToolResult] = []  # the real result, relayed as-is when it is what the agent gets

        async def real(call: Call) -> Observation:
            started = time.perf_counter()
            try:
                if local is not None:
                    result = await call_next(context)
                else:
                    with self.relay.forwarding(session.id, server, ctx):
                        result = await call_next(context)
            except Exception as exc:  # noqa: BLE001 -- the real side's boundary: whatever the upstream or tool raised becomes an error observation (_real_failure)
                return await self._real_failure(exc, call, local is None, session.id, time.perf_counter() - started)
            upstream.append(result)
            return observation_from_result(result, latency_s=time.perf_counter() - started, local=local is not None)

        note = (
            "; ".join(n for n in (self._schema_change_note(server), self.runtime.pins.note(server, upstream_tool)) if n)
            if local is None
            else ""
        )
        outcome = await self.runtime.engine.handle(call, session, real, note=note, read_only=definition.read_only)
        if self.runtime.tracer is not None:
            annotate_current(outcome.record, method="tools/call", target=name, tool_name=name)
        return result_from_observation(outcome.observation, outcome.record, upstream=upstream[0] if upstream else None)

    async def on_list_tools(self, context: MiddlewareContext[Any], call_next: CallNext[Any, Sequence[Tool]]) -> Sequence[Tool]:
        """An episode lists the tools of its channels and servers only."""
        await self.runtime.pins.refresh()  # a change accepted elsewhere is listed as accepted
        tools = await call_next(context)
        ctx = context.fastmcp_context
        session = self.runtime.sessions.find(agent_session_id(ctx)) if ctx is not None else None
        scope = session.episode.scope if session is not None and session.episode is not None else None
        if scope is None:
            return tools
        return [tool for tool in tools if self._environment_of(tool.name) in scope]

    def _environment_of(self, name: str) -> tuple[str, str]:
        _, _, channel, server, _ = self._target(name)
        return channel, server

    async def _session(self, session_id: str, call: Call) -> Session | ToolResult:
        """The agent's session, or (past the session cap) the recorded refusal."""
        try:
            return self.runtime.sessions.get(session_id)
        except SessionRefusedError as exc:
            transient = Session(id=session_id)
            refused = Call(call.channel, call.server, call.tool, call.arguments, session_id)
            outcome = await self.runtime.engine.reject(refused, transient, policy="sessions", reason=str(exc))
            return result_from_observation(outcome.observation, outcome.record)

    async def _real_failure(self, exc: Exception, call: Call, upstream_tool: bool, session_id: str, latency: float) -> Observation:
        if (start_failure := _cause_of_type(exc, UpstreamError)) is not None:
            return Observation.error(f"simroute: {start_failure}", Provenance.NONE, latency)
        if (missing := _cause_of_type(exc, BackendUnavailable)) is not None:  # e.g. no Docker engine for the shell
            return Observation.error(f"simroute: {missing}", Provenance.NONE, latency)
        if isinstance(exc, MCPError):  # the upstream answered with a protocol error (e.g. invalid params)
            return Observation.error(f"upstream {call.server!r} error: {exc}", Provenance.REAL, latency)
        # The upstream broke mid-call: report it, start a new one next time.
        log.warning("upstream %r failed on %r: %r", call.server, call.tool, exc)
        if upstream_tool:
            await self.runtime.upstreams.discard(session_id, call.server)
        return Observation.error(
            f"simroute: upstream {call.server!r} failed while calling {call.tool!r}: {type(exc).__name__}: {exc}", Provenance.NONE, latency
        )

    async def _definition(self, ctx: Any, name: str, target: tuple[str, str] | None) -> ToolDefinition | None:
        """The tool's definition without waiting on the upstream when it can be had: from
        the proxy provider's fresh listing cache, else the stored snapshot; only a tool
        neither knows is listed (under the provider's listing deadline)."""
        if target is None:
            return None
        server, tool = target
        provider = self.providers[server]
        cached = provider.cached_tool(tool)
        if cached is not None:
            return ToolDefinition.of_tool(cached)
        for definition in self.runtime.store.tool_snapshot(server) or []:
            if definition.get("name") == tool:
                return ToolDefinition.of_snapshot(definition)
        try:
            found = await ctx.fastmcp.get_tool(name)
        except NotFoundError:
            return None
        return ToolDefinition.of_tool(found) if found is not None else None

    async def _pins_current(self, server: str) -> None:
        """Before an upstream call is routed: the server's tools listed again when they
        changed (it said so, or a change of theirs was accepted elsewhere), so the pins
        judge the definitions it serves now; and the pins' pending changes fresh."""
        pins = self.runtime.pins
        if server in pins.stale:
            try:
                await self.providers[server].relist()
            except Exception as exc:  # noqa: BLE001 -- the listing's boundary (as the provider's): the call is still routed by the pins' last state, and a real call meets the same failure
                log.warning("could not list the changed tools of %r again: %s", server, exc)
        await pins.refresh()

    def _schema_change_note(self, server: str) -> str:
        """Said once, on the first call after an upstream's tool definitions changed."""
        provider = self.providers[server]
        previous, provider.schema_changed_from = provider.schema_changed_from, None
        return f"tool definitions of {server!r} changed since the last snapshot (was {previous})" if previous else ""

    def _schema_problem(self, name: str, schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
        """Why `arguments` fail the tool's input schema, or None. Checked here so that
        simulated and replayed calls are held to the same contract as real ones."""
        key = (name, id(schema))
        if key not in self._validators:
            try:
                Draft202012Validator.check_schema(schema)
                self._validators[key] = (schema, Draft202012Validator(schema))
            except SchemaError:
                log.warning("tool %r declares an invalid input schema; arguments are not checked", name)
                self._validators[key] = (schema, None)
        validator = self._validators[key][1]
        if validator is None:
            return None
        error = next(iter(validator.iter_errors(arguments)), None)
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path) or "arguments"
        return f"invalid arguments for tool {name!r}: {where}: {error.message}"

    # --- resources/read and prompts/get ---------------------------------------------------

    async def on_read_resource(self, context: MiddlewareContext[Any], call_next: CallNext[Any, ResourceResult]) -> ResourceResult:
        uri = str(context.message.uri)
        target = server_of_uri(uri, self.names.servers, prefixed=self.names.prefixed)
        server = target[0] if target is not None else "unknown"
        outcome, upstream = await self._routed_read(context, call_next, server, READ_RESOURCE, {"uri": uri}, observation_of_resource)
        if outcome.observation.is_error:
            raise ResourceError(outcome.observation.text)
        if upstream:
            return ResourceResult(upstream[0].contents, meta={**(upstream[0].meta or {}), "simroute": simroute_meta(outcome.record)})
        return resource_result(outcome.observation, {"simroute": simroute_meta(outcome.record)})

    async def on_get_prompt(self, context: MiddlewareContext[Any], call_next: CallNext[Any, PromptResult]) -> PromptResult:
        name = context.message.name
        target = self.names.split(name)
        server, prompt = target if target is not None else ("unknown", name)
        arguments = {"name": prompt, "arguments": dict(context.message.arguments or {})}
        outcome, upstream = await self._routed_read(context, call_next, server, GET_PROMPT, arguments, observation_of_prompt)
        if outcome.observation.is_error:
            raise PromptError(outcome.observation.text)
        if upstream:
            found = upstream[0]
            return PromptResult(
                found.messages, description=found.description, meta={**(found.meta or {}), "simroute": simroute_meta(outcome.record)}
            )
        return prompt_result(outcome.observation, {"simroute": simroute_meta(outcome.record)})

    async def _routed_read(
        self, context: MiddlewareContext[Any], call_next: CallNext[Any, Any], server: str, tool: str, arguments: dict[str, Any], observe
    ):
        """A resource read or prompt fetch through the engine: (outcome, the upstream's
        own result when the agent is served it)."""
        ctx = context.fastmcp_context
        assert ctx is not None
        call = Call("mcp", server, tool, arguments, "")
        session = await self._session(agent_session_id(ctx), call)
        if isinstance(session, ToolResult):
            raise (ResourceError if tool == READ_RESOURCE else PromptError)(session.content[0].text)  # type: ignore[union-attr]
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
                return await self._real_failure(exc, call, True, session.id, time.perf_counter() - started)
            upstream.append(result)
            return observe(result, latency_s=time.perf_counter() - started)

        # Reading changes nothing: no write-ahead record.
        outcome = await self.runtime.engine.handle(call, session, real, read_only=True)
        if self.runtime.tracer is not None:  # the target: the resource's URI, the prompt's name
            annotate_current(outcome.record, method=tool, target=arguments.get("uri") or arguments.get("name") or server)
        return outcome, upstream if outcome.observation.provenance is Provenance.REAL and not outcome.observation.is_error else []


def _cause_of_type[E: BaseException](exc: BaseException, kind: type[E]) -> E | None:
    """`exc` or the first exception in its cause chain that is a `kind`
    (fastmcp wraps a provider's failure in a ToolError)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
