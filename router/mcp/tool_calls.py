"""A `tools/call` through the engine, whichever way it arrived: the wire's own handler
(router/mcp/call_handler.py) or fastmcp's middleware chain (an episode's step taken
in-process, router/mcp/middleware.py).

What every call gets, on every route: the tool's definition (its pin, else the fresh
listing, else the snapshot), the pins' holds and notes, unknown-tool refusal, the
arguments checked against the definition's input schema, idempotency (a key in
`_meta`, an episode's retried request), and the engine's decision, addons and records
(write-ahead and final). The front door says how the real side is reached (`Send`);
the answer is the wire's `CallToolResult`, `_meta.simroute` included, the upstream's
own content and `_meta` relayed as they came when the agent is served them. An
episode's step taken in process (`step`) gets the same work and, beside the result,
the call's record (`Routed`): its route, provenance and record id as values.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types
from fastmcp.exceptions import NotFoundError
from fastmcp.tools.base import Tool
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from mcp.shared.exceptions import MCPError

from backends.errors import BackendUnavailable
from backends.mcp.upstream import UpstreamError
from calls import Call, Observation, Provenance, Session
from records.record import Record
from records.shared_state.answered_once import answered_once
from records.shared_state.answers import IdempotencyError, IdempotencyLost
from router.addons.tracing import annotate_current
from router.engine.sessions import SessionRefusedError
from router.mcp.episode_front_door import stepped_over_mcp
from router.mcp.idempotency_keys import answered_once_by_key, idempotency_key_of
from router.mcp.identity import agent_session_id
from router.mcp.local_tools import LocalTool
from router.mcp.names import ToolNames
from router.mcp.provider import SnapshotProxyProvider
from router.mcp.relay import FrontRelay
from router.mcp.results import (
    call_result_from_observation,
    call_result_json,
    call_result_of_json,
    observation_from_call_result,
)
from router.mcp.retries import RetriedRequests, retry_key
from router.mcp.virtual_provider import VirtualProvider
from router.runtime.parts import McpParts

log = logging.getLogger("simroute.mcp")

# The real side of one call, as the front door reaches it: the tool's own result.
Send = Callable[[], Awaitable[mcp_types.CallToolResult]]


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


@dataclass(frozen=True, slots=True)
class Routed:
    """A call's answer and its record (how it was routed, served and recorded)."""

    result: mcp_types.CallToolResult
    record: Record
    unknown: bool = False  # no source knows the tool: the wire answers it as fastmcp does (NotFoundError)


@dataclass(frozen=True, slots=True)
class Target:
    """Where a front name goes: simroute's own tool, or (server, upstream tool)."""

    local: LocalTool | None
    known: bool  # False: no server's name (an unknown tool)
    channel: str
    server: str
    tool: str


class ToolCalls:
    def __init__(
        self,
        parts: McpParts,
        names: ToolNames,
        providers: Mapping[str, SnapshotProxyProvider | VirtualProvider],
        local: Mapping[str, LocalTool] | None = None,
        *,
        relay: FrontRelay | None = None,
    ) -> None:
        self.parts = parts
        self.relay = relay or FrontRelay(
            prefixed=names.prefixed
        )  # the upstreams' notifications, during the calls forwarded
        self.names = names
        self.providers = providers
        # simroute's own tools (shell, browser) by name; they win over an upstream's tool of the same name.
        self.local = dict(local or {})
        self.once = answered_once_by_key(parts)
        # (tool name, id of its schema) -> (the schema, kept so its id stays unique; its validator)
        self._validators: dict[tuple[str, int], tuple[dict[str, Any], Draft202012Validator | None]] = {}

    def target(self, name: str) -> Target:
        local = self.local.get(name)
        if local is not None:
            return Target(local, True, local.channel, local.server, name)
        split = self.names.split(name)
        if split is None:
            return Target(None, False, "mcp", "unknown", name)
        return Target(None, True, "mcp", split[0], split[1])

    async def call(self, ctx: Any, name: str, arguments: dict[str, Any], send: Send) -> mcp_types.CallToolResult:
        """The agent's answer to `tools/call` of `name` (its current request: `ctx`).
        Raises NotFoundError for a tool no source knows (recorded first)."""
        target = self.target(name)
        session = await self.session(
            agent_session_id(ctx), Call(target.channel, target.server, target.tool, arguments, "")
        )
        if isinstance(session, Routed):
            return session.result
        key = idempotency_key_of(ctx)
        if key is not None:  # answered once on any replica (idempotency_keys.py)
            return await self._once_by_key(key, ctx, name, arguments, target, session, send)
        if session.is_episode:  # a retried request is answered once
            return await answered_once(
                session.slice(RetriedRequests).answers,
                retry_key(ctx, name, arguments),
                lambda: self._call(ctx, name, arguments, target, session, send),
            )
        return await self._call(ctx, name, arguments, target, session, send)

    async def _once_by_key(
        self, key: str, ctx: Any, name: str, arguments: dict[str, Any], target: Target, session: Session, send: Send
    ) -> mcp_types.CallToolResult:
        async def produce() -> dict[str, Any]:
            return call_result_json(await self._call(ctx, name, arguments, target, session, send))

        try:
            return call_result_of_json(
                await self.once.run(session, key, {"tool": name, "arguments": arguments}, produce)
            )
        except (
            IdempotencyError,
            IdempotencyLost,
        ) as exc:  # refused, or lost with its replica: recorded, provenance none
            call = Call(target.channel, target.server, target.tool, arguments, session.id)
            outcome = await self.parts.engine.reject(call, session, policy="idempotency", reason=str(exc))
            return call_result_from_observation(outcome.observation, outcome.record)

    async def step(self, ctx: Any, session_id: str, name: str, arguments: dict[str, Any], send: Send) -> Routed:
        """An episode's step taken in process (router/episodes/steps.py): the wire's work
        on the episode's session, answered with its record. The episode's host counts the
        step and answers its retries (by idempotency key) itself."""
        target = self.target(name)
        session = await self.session(session_id, Call(target.channel, target.server, target.tool, arguments, ""))
        if isinstance(session, Routed):
            return session
        return await self._route(ctx, name, arguments, target, session, send)

    async def _call(
        self, ctx: Any, name: str, arguments: dict[str, Any], target: Target, session: Session, send: Send
    ) -> mcp_types.CallToolResult:
        front_door = stepped_over_mcp(session)  # an episode's call over /mcp/e/{id}: one of its steps (counted, capped)
        if front_door is None:
            return await self._answer(ctx, name, arguments, target, session, send)
        call = Call(target.channel, target.server, target.tool, arguments, session.id)
        return await front_door.step(call, lambda: self._answer(ctx, name, arguments, target, session, send))

    async def _answer(
        self, ctx: Any, name: str, arguments: dict[str, Any], target: Target, session: Session, send: Send
    ) -> mcp_types.CallToolResult:
        """The wire's answer; NotFoundError for a tool no source knows (recorded)."""
        routed = await self._route(ctx, name, arguments, target, session, send)
        if routed.unknown:
            raise NotFoundError(f"Unknown tool: {name!r}")
        return routed.result

    async def _route(
        self, ctx: Any, name: str, arguments: dict[str, Any], target: Target, session: Session, send: Send
    ) -> Routed:
        local, server = target.local, target.server
        call = Call(target.channel, server, target.tool, arguments, session.id)
        scope = session.episode.scope if session.episode is not None else None  # an episode's channels and servers
        in_scope = scope is None or (target.channel, server) in scope
        if in_scope and local is None and target.known:
            await self._pins_current(server)
        definition = None
        if in_scope:
            definition = (
                ToolDefinition.of_tool(local.tool) if local is not None else await self._definition(ctx, name, target)
            )
        unlisted = (
            self.providers[server].listing_error
            if definition is None and in_scope and local is None and target.known
            else None
        )
        if unlisted is not None:  # not the agent's mistake: the server could not say what its tools are
            reason = (
                f"simroute: upstream {server!r} could not list its tools ({unlisted}), "
                f"so {name!r} was not called; try again"
            )
            outcome = await self.parts.engine.reject(call, session, policy="upstream-listing", reason=reason)
            return Routed(call_result_from_observation(outcome.observation, outcome.record), outcome.record)
        if definition is None:
            outcome = await self.parts.engine.reject(
                call, session, policy="unknown-tool", reason=f"Unknown tool: {name!r}"
            )
            return Routed(
                call_result_from_observation(outcome.observation, outcome.record), outcome.record, unknown=True
            )

        problem = self._schema_problem(name, definition.input_schema, arguments)
        refused = (
            ("input-schema", problem)
            if problem is not None
            else (local.refusal(arguments) if local is not None and local.refusal else None)
        )
        if refused is not None:
            outcome = await self.parts.engine.reject(call, session, policy=refused[0], reason=refused[1])
            return Routed(call_result_from_observation(outcome.observation, outcome.record), outcome.record)

        upstream: list[mcp_types.CallToolResult] = []  # the real result, relayed as-is when it is what the agent gets

        async def real(call: Call) -> Observation:
            started = time.perf_counter()
            try:
                if local is not None:
                    result = await send()
                else:
                    with self.relay.forwarding(session.id, server, ctx):
                        result = await send()
            except Exception as exc:  # noqa: BLE001 -- the real side's boundary: whatever the upstream or tool raised becomes an error observation (real_failure)
                return await self.real_failure(exc, call, local is None, session.id, time.perf_counter() - started)
            upstream.append(result)
            return observation_from_call_result(
                result, latency_s=time.perf_counter() - started, local=local is not None
            )

        note = (
            "; ".join(n for n in (self._schema_change_note(server), self.parts.pins.note(server, target.tool)) if n)
            if local is None
            else ""
        )
        outcome = await self.parts.engine.handle(call, session, real, note=note, read_only=definition.read_only)
        if self.parts.tracing:
            annotate_current(outcome.record, method="tools/call", target=name, tool_name=name)
        result = call_result_from_observation(
            outcome.observation, outcome.record, upstream=upstream[0] if upstream else None
        )
        return Routed(result, outcome.record)

    async def session(self, session_id: str, call: Call) -> Session | Routed:
        """The agent's session, or (past the session cap) the recorded refusal."""
        try:
            return self.parts.sessions.get(session_id)
        except SessionRefusedError as exc:
            transient = Session(id=session_id)
            refused = Call(call.channel, call.server, call.tool, call.arguments, session_id)
            outcome = await self.parts.engine.reject(refused, transient, policy="sessions", reason=str(exc))
            return Routed(call_result_from_observation(outcome.observation, outcome.record), outcome.record)

    async def real_failure(
        self, exc: Exception, call: Call, upstream_tool: bool, session_id: str, latency: float
    ) -> Observation:
        if (start_failure := _cause_of_type(exc, UpstreamError)) is not None:
            return Observation.error(f"simroute: {start_failure}", Provenance.NONE, latency)
        if (missing := _cause_of_type(exc, BackendUnavailable)) is not None:  # e.g. no Docker engine for the shell
            return Observation.error(f"simroute: {missing}", Provenance.NONE, latency)
        if isinstance(exc, MCPError):  # the upstream answered with a protocol error (e.g. invalid params)
            return Observation.error(f"upstream {call.server!r} error: {exc}", Provenance.REAL, latency)
        # The upstream broke mid-call: report it, start a new one next time.
        log.warning("upstream %r failed on %r: %r", call.server, call.tool, exc)
        if upstream_tool:
            await self.parts.upstreams.discard(session_id, call.server)
        return Observation.error(
            f"simroute: upstream {call.server!r} failed while calling {call.tool!r}: {type(exc).__name__}: {exc}",
            Provenance.NONE,
            latency,
        )

    async def _definition(self, ctx: Any, name: str, target: Target) -> ToolDefinition | None:
        """The tool's definition without waiting on the upstream when it can be had: from
        the proxy provider's fresh listing cache, else the stored snapshot; only a tool
        neither knows is listed (under the provider's listing deadline)."""
        if not target.known:
            return None
        provider = self.providers[target.server]
        cached = provider.cached_tool(target.tool)
        if cached is not None:
            return ToolDefinition.of_tool(cached)
        for definition in self.parts.store.tool_snapshot(target.server) or []:
            if definition.get("name") == target.tool:
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
        pins = self.parts.pins
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


def _cause_of_type[E: BaseException](exc: BaseException, kind: type[E]) -> E | None:
    """`exc` or the first exception in its cause chain that is a `kind`
    (fastmcp wraps a provider's failure in a ToolError)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, kind):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
