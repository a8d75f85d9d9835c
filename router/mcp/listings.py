"""`tools/list`, `resources/list`, `resources/templates/list` and `prompts/list` as the
upstreams answer them, page by page.

With one source (one upstream, or an episode scoped to one), the agent's cursor goes to
the upstream and its page comes back as it sent it: the same items, `nextCursor` and
`_meta`. With several (several upstreams, or simroute's own shell and browser tools
beside them), each request reads the next page of every source that has one, and the
cursor says where each source is (opaque to the agent). Names are prefixed as the
routing middleware splits them (`server_tool`, `scheme://server/path`). A changed tool
is listed as pinned (router/mcp/provider.py). A source that cannot list is left out,
and the agent gets a log message (`notifications/message`, logger `simroute`) naming
the server and why; an upstream that cannot start is listed from its snapshot with
each tool marked `_meta.simroute.unavailable`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
from collections.abc import Mapping
from typing import Any

import mcp_types
from fastmcp import FastMCP
from fastmcp.server.context import Context
from fastmcp.server.dependencies import get_context
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INVALID_PARAMS,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    PaginatedRequestParams,
)

from backends.mcp.fastmcp_private import low_level
from calls import Session
from router.mcp.episode_front_door import EpisodeFrontDoor
from router.mcp.identity import agent_session_id
from router.mcp.local_tools import LocalTool
from router.mcp.names import ToolNames
from router.mcp.provider import Page, SnapshotProxyProvider
from router.mcp.reads import namespaced_uri
from router.mcp.virtual_provider import VirtualProvider
from router.runtime.parts import McpParts

log = logging.getLogger("simroute.mcp")

LOCAL = "simroute"  # the source of simroute's own tools (shell, browser)
_METHODS = {
    "tools/list": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
    "prompts/list": "prompts",
}
_RESULTS: dict[str, type[Any]] = {
    "tools": mcp_types.ListToolsResult,
    "resources": mcp_types.ListResourcesResult,
    "resourceTemplates": mcp_types.ListResourceTemplatesResult,
    "prompts": mcp_types.ListPromptsResult,
}
_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class Listings:
    def __init__(
        self,
        parts: McpParts,
        names: ToolNames,
        providers: Mapping[str, SnapshotProxyProvider | VirtualProvider],
        local: Mapping[str, LocalTool],
    ) -> None:
        self.parts = parts
        self.names = names
        self.providers = providers
        self.local = local

    def register(self, server: FastMCP) -> None:
        """Serve the four listings instead of fastmcp (which lists every page of every
        provider at once and renders each definition again)."""
        for method, kind in _METHODS.items():
            low_level(server).add_request_handler(method, PaginatedRequestParams, self._handler(server, kind))

    def _handler(self, server: FastMCP, kind: str):
        async def handle(ctx: Any, params: PaginatedRequestParams | None) -> Any:
            async with Context(fastmcp=server, session=ctx.session):
                return await self.answer(kind, params)

        return handle

    async def answer(self, kind: str, params: PaginatedRequestParams | None) -> Any:
        ctx = get_context()
        if kind == "tools":
            await self.parts.pins.refresh()  # a change accepted elsewhere is listed as accepted
        sources = self._sources(kind, agent_session_id(ctx))
        cursor = params.cursor if params is not None else None
        if len(sources) == 1:  # the agent's cursor and `_meta` go to the source as they came
            [source] = sources
            page = await self._page(ctx, source, kind, cursor, params.meta if params is not None else None, alone=True)
            return _result(kind, self._named(source, kind, page.items), page.next_cursor, page.meta)
        at = _positions(cursor) if cursor is not None else {source: None for source in sources}
        wanted = [source for source in sources if source in at]
        pages = await asyncio.gather(
            *(self._page(ctx, source, kind, at[source], None, alone=False) for source in wanted)
        )
        items = [
            item for source, page in zip(wanted, pages, strict=True) for item in self._named(source, kind, page.items)
        ]
        after = {
            source: page.next_cursor for source, page in zip(wanted, pages, strict=True) if page.next_cursor is not None
        }
        return _result(kind, items, _cursor(after) if after else None, None)

    def _sources(self, kind: str, session_id: str) -> list[str]:
        session = self.parts.sessions.find(session_id)
        scope = session.episode.scope if session is not None and session.episode is not None else None
        sources = [LOCAL] if kind == "tools" and self._local_tools(scope, session) else []
        for server, provider in self.providers.items():
            if (kind == "tools" or isinstance(provider, SnapshotProxyProvider)) and (
                scope is None or ("mcp", server) in scope
            ):
                sources.append(server)
        return sources

    def _local_tools(self, scope: Any, session: Session | None) -> list[dict[str, Any]]:
        front_door = session.find(EpisodeFrontDoor) if session is not None else None
        own = [
            *(e.tool for e in self.local.values() if scope is None or (e.channel, e.server) in scope),
            *(front_door.tools() if front_door else ()),
        ]
        return [
            tool.to_mcp_tool().model_dump(mode="json", by_alias=True, exclude_none=True) for tool in own
        ]  # an episode's http_request too

    async def _page(self, ctx: Context, source: str, kind: str, cursor: str | None, meta: Any, *, alone: bool) -> Page:
        if source == LOCAL:
            session = self.parts.sessions.find(agent_session_id(ctx))
            return Page(
                self._local_tools(
                    session.episode.scope if session is not None and session.episode is not None else None, session
                )
            )
        provider = self.providers[source]
        try:
            page = await provider.page(kind, cursor, dict(meta) if meta else None)
        except MCPError:
            if alone and cursor is not None:  # the upstream's own answer to the agent's cursor, as it sent it
                raise
            page = await self._left_out(ctx, source, kind, "the upstream refused")
        except Exception as exc:  # noqa: BLE001 -- a source's boundary: one that cannot list (cannot start, hung, pins unreadable) is left out, and the agent is told
            page = await self._left_out(ctx, source, kind, str(exc))
        if page.unavailable is not None and page.items:
            await self._notice(
                ctx,
                f"simroute: upstream {source!r} is unavailable ({page.unavailable}); "
                "its tools are listed from its last snapshot",
            )
        return page

    async def _left_out(self, ctx: Context, source: str, kind: str, cause: str) -> Page:
        log.warning("%s of %r not listed: %s", _LABELS[kind], source, cause)
        await self._notice(
            ctx, f"simroute: upstream {source!r} could not list its {_LABELS[kind]}, so none are listed: {cause}"
        )
        return Page([], unavailable=cause)

    def _named(self, source: str, kind: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if source == LOCAL or not self.names.prefixed:
            return items
        if kind in ("tools", "prompts"):
            return [{**item, "name": f"{source}_{item['name']}"} for item in items]
        key = "uri" if kind == "resources" else "uriTemplate"
        return [{**item, key: namespaced_uri(source, str(item[key]))} for item in items]

    async def _notice(self, ctx: Context, text: str) -> None:
        """A warning to the agent about its listing, unless it asked for errors only."""
        session_id = agent_session_id(ctx)
        level = self.parts.upstreams.log_levels.get(session_id, "debug")
        if _LEVELS.index(level) > _LEVELS.index("warning"):
            return
        notice = LoggingMessageNotification(
            params=LoggingMessageNotificationParams(level="warning", logger="simroute", data=text)
        )
        try:
            await ctx.session.send_notification(notice, related_request_id=ctx.request_id)
        except Exception as exc:  # noqa: BLE001 -- best effort, as every notification to an agent that may be gone
            log.debug("could not tell session %s: %s", session_id, exc)


_LABELS = {"tools": "tools", "resources": "resources", "resourceTemplates": "resource templates", "prompts": "prompts"}


def _result(kind: str, items: list[dict[str, Any]], next_cursor: str | None, meta: dict[str, Any] | None) -> Any:
    return _RESULTS[kind].model_validate(
        {
            kind: items,
            **({"nextCursor": next_cursor} if next_cursor is not None else {}),
            **({"_meta": meta} if meta else {}),
        }
    )


def _cursor(positions: dict[str, str]) -> str:
    """Where each source with more pages is, as an opaque cursor."""
    return base64.urlsafe_b64encode(json.dumps(positions, separators=(",", ":")).encode()).decode()


def _positions(cursor: str) -> dict[str, str | None]:
    try:
        positions = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, binascii.Error) as exc:
        raise MCPError(INVALID_PARAMS, f"invalid cursor: {cursor!r}") from exc
    if not isinstance(positions, dict) or not all(isinstance(value, str) for value in positions.values()):
        raise MCPError(INVALID_PARAMS, f"invalid cursor: {cursor!r}")
    return positions
