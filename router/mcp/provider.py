"""A proxy provider that remembers its upstream's tools and lists it page by page.

The agent's listings (router/mcp/listings.py) read one upstream page per request, with
the agent's cursor, and get the definitions as the server sent them. Every tools page is
reconciled with the tool-definition pins (router/engine/pin_guard.py): the agent is
served each changed tool as pinned, and a complete listing is what is snapshotted in the
record store (so prompts, the safety gate and episodes read it too). When the upstream
cannot start (no credentials, offline), the snapshot still lists its tools, marked
unavailable (`_meta.simroute.unavailable`: why), so the sim and replay routes keep
serving them; the real route answers with the upstream's start error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from fastmcp.prompts.base import Prompt
from fastmcp.resources.base import Resource
from fastmcp.resources.template import ResourceTemplate
from fastmcp.server.providers.proxy import ClientFactoryT, ProxyProvider
from fastmcp.tools.base import Tool
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND, PaginatedRequestParams

from backends.mcp.fastmcp_private import CacheEntry, monitored
from backends.mcp.upstream import UpstreamError
from records.store.protocol import RecordStore, StoreError
from router.engine.pin_guard import PinGuard
from router.mcp.upstream_tool import UpstreamTool

log = logging.getLogger("simroute.mcp")

KINDS = ("tools", "resources", "resourceTemplates", "prompts")  # a listing's kind: the key of its result's items
_MAX_PAGES = 100  # a whole listing (for simroute's own use) reads at most this many upstream pages
_OPEN_CHAINS = 16  # listings read page by page at once, per upstream, whose snapshot is still being assembled


@dataclass
class Page:
    """One page of a listing: its items (wire JSON), the next page's cursor and `_meta`."""

    items: list[dict[str, Any]]
    next_cursor: str | None = None
    meta: dict[str, Any] | None = None
    unavailable: str | None = None  # the upstream could not list: why (the items are its snapshot, or none)


@dataclass
class _Chain:
    served: list[dict[str, Any]] = field(default_factory=list)


class SnapshotProxyProvider(ProxyProvider):
    def __init__(
        self,
        client_factory: ClientFactoryT,
        *,
        server: str,
        store: RecordStore,
        list_timeout_s: float = 30.0,
        on_tools: Callable[[str, list[dict]], None] | None = None,
        prefer_snapshot: Callable[[], bool] = lambda: False,
        pins: PinGuard | None = None,
    ) -> None:
        super().__init__(client_factory)
        self.server = server
        self.store = store
        # Every listing has a deadline: a hung upstream never hangs the agent's request.
        self.list_timeout_s = list_timeout_s
        self.on_tools = on_tools  # told every listing's definitions (the safety gate's tool catalog)
        self.prefer_snapshot = prefer_snapshot  # true: list from the snapshot, when there is one, without the upstream
        self.pins = pins  # None: listings are served as listed
        self.schema_changed_from: str | None = None  # the previous snapshot's digest, once
        # Why the last tools listing failed with no snapshot to fall back on (None: it did
        # not): a call to one of the server's tools is then simroute's failure, not an unknown tool.
        self.listing_error: str | None = None
        self._tools_by_name: tuple[object, dict[str, Tool]] = (None, {})
        # Listings the agent reads page by page, by the cursor of their next page.
        self._chains: dict[str, _Chain] = {}
        # Episodes wait for one another's first listing: a thousand simulated episodes
        # reset on a fresh store start one upstream to list, not a thousand.
        self._first_listing = asyncio.Lock()

    async def _listed[T](self, kind: str, listing: Callable[[], Awaitable[T]]) -> T:
        try:
            with anyio.fail_after(self.list_timeout_s):
                return await listing()
        except TimeoutError as exc:
            raise UpstreamError(
                f"upstream {self.server!r} did not list its {kind} within {self.list_timeout_s:g}s"
            ) from exc

    # --- pages, as the agent reads them ---------------------------------------------------

    async def page(self, kind: str, cursor: str | None, meta: dict[str, Any] | None = None) -> Page:
        """One upstream page of a listing of `kind` (KINDS), from `cursor`."""
        if kind == "tools":
            if cursor is None and self.prefer_snapshot():
                async with self._first_listing:
                    snapshot = self.store.tool_snapshot(self.server)
                    if snapshot is not None:
                        self._from_snapshot(snapshot)
                        return Page(snapshot)
                    return await self._tools_page(cursor, meta)
            return await self._tools_page(cursor, meta)
        return await self._listed(_LABEL[kind], lambda: self._upstream_page(kind, cursor, meta))

    async def _tools_page(self, cursor: str | None, meta: dict[str, Any] | None) -> Page:
        page = await self._live_tools_page(cursor, meta)
        if page.unavailable is not None:
            return page
        chain = _Chain() if cursor is None else self._chains.pop(cursor, None)
        if chain is None:  # a page out of any listing read here from its start: nothing to snapshot
            return page
        chain.served += page.items
        if page.next_cursor is None:
            await self._complete(chain.served)
        else:
            while len(self._chains) >= _OPEN_CHAINS:
                self._chains.pop(next(iter(self._chains)))
            self._chains[page.next_cursor] = chain
        return page

    async def _live_tools_page(self, cursor: str | None, meta: dict[str, Any] | None) -> Page:
        """A tools page as served (changed tools as pinned), or, when the first page cannot
        be had, the snapshot marked unavailable."""
        try:
            page = await self._listed("tools", lambda: self._upstream_page("tools", cursor, meta))
            served = page.items if self.pins is None else await self.pins.reconcile(self.server, page.items)
        except Exception as exc:
            # the listing's boundary: an upstream unreachable or hung, pins unreadable (any
            # failure) fall back to its last known tools, else re-raised
            snapshot = self.store.tool_snapshot(self.server) if cursor is None else None
            if snapshot is None:
                self.listing_error = f"{type(exc).__name__}: {exc}"
                raise
            log.warning("tools of %r not listed live (%s); serving them from the snapshot", self.server, exc)
            self._from_snapshot(snapshot)
            cause = str(exc)
            return Page([_marked_unavailable(definition, cause) for definition in snapshot], unavailable=cause)
        self.listing_error = None
        return Page(served, page.next_cursor, page.meta)

    async def _upstream_page(self, kind: str, cursor: str | None, meta: dict[str, Any] | None) -> Page:
        client = await self._get_client()
        params = PaginatedRequestParams.model_validate(
            {"cursor": cursor, "_meta": meta}
        )  # the agent's `_meta`, checked as the SDK's
        async with client:
            try:
                result = await monitored(client, _LIST[kind](client.session, params))
            except MCPError as exc:
                if exc.error.code == METHOD_NOT_FOUND:  # a server without such things lists none
                    return Page([])
                raise
        items = [
            item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in getattr(result, _FIELD[kind])
        ]
        return Page(items, result.next_cursor, result.meta)

    async def _complete(self, served: list[dict[str, Any]]) -> list[Tool]:
        """A whole tools listing was read: cached for calls, told the tool catalog, snapshotted."""
        tools: list[Tool] = [UpstreamTool.of_definition(self.client_factory, definition) for definition in served]
        self._tools_cache = CacheEntry(tools, time.monotonic())
        if self.on_tools is not None:
            self.on_tools(self.server, served)
        try:
            previous = await self.store.save_tool_snapshot(self.server, served)
        except StoreError as exc:
            log.error("%s", exc)
        else:
            if previous is not None:
                self.schema_changed_from = previous
        return tools

    # --- whole listings, for simroute's own lookups (a call's tool, an episode's list) -----

    async def _list_resources(self) -> Sequence[Resource]:
        return await self._listed("resources", super()._list_resources)

    async def _list_resource_templates(self) -> Sequence[ResourceTemplate]:
        return await self._listed("resource templates", super()._list_resource_templates)

    async def _list_prompts(self) -> Sequence[Prompt]:
        return await self._listed("prompts", super()._list_prompts)

    async def _list_tools(self) -> Sequence[Tool]:
        if not self.prefer_snapshot():
            return await self._list_tools_live()
        async with self._first_listing:
            snapshot = self.store.tool_snapshot(self.server)
            return self._from_snapshot(snapshot) if snapshot is not None else await self._list_tools_live()

    async def _list_tools_live(self) -> Sequence[Tool]:
        served: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await self._live_tools_page(cursor, None)
            if page.unavailable is not None:
                return list(self._tools_cache.items) if self._tools_cache is not None else []
            served += page.items
            cursor = page.next_cursor
            if cursor is None:
                break
        return await self._complete(served)

    async def relist(self) -> None:
        """List the upstream's tools again now (its tools changed): what changed is
        reconciled with the pins before the next call is routed."""
        self.forget("tools")
        await self._list_tools_live()

    def _from_snapshot(self, snapshot: list[dict]) -> list[Tool]:
        if self.on_tools is not None:
            self.on_tools(self.server, snapshot)
        tools: list[Tool] = [UpstreamTool.of_definition(self.client_factory, definition) for definition in snapshot]
        self._tools_cache = CacheEntry(tools, time.monotonic())
        return tools

    def cached_tool(self, name: str) -> Tool | None:
        """The upstream tool `name` from a fresh listing cache, or None."""
        cache = self._tools_cache
        if cache is None or not cache.is_fresh(self._cache_ttl):
            return None
        if self._tools_by_name[0] is not cache:
            self._tools_by_name = (cache, {tool.name: tool for tool in cache.items})
        return self._tools_by_name[1].get(name)

    def forget(self, kind: str) -> None:
        """Drop a cached listing after the upstream said it changed."""
        attribute = {"tools": "_tools_cache", "resources": "_resources_cache", "prompts": "_prompts_cache"}.get(kind)
        if attribute:
            setattr(self, attribute, None)
        if kind == "resources":
            self._templates_cache = None

    def snapshot(self) -> list[dict]:
        """The upstream's tool definitions as last seen (for prompts and records)."""
        return self.store.tool_snapshot(self.server) or []


_LABEL = {"tools": "tools", "resources": "resources", "resourceTemplates": "resource templates", "prompts": "prompts"}
_FIELD = {"tools": "tools", "resources": "resources", "resourceTemplates": "resource_templates", "prompts": "prompts"}
_LIST: dict[str, Callable[[Any, PaginatedRequestParams], Coroutine[Any, Any, Any]]] = {
    "tools": lambda session, params: session.list_tools(params=params),
    "resources": lambda session, params: session.list_resources(params=params),
    "resourceTemplates": lambda session, params: session.list_resource_templates(params=params),
    "prompts": lambda session, params: session.list_prompts(params=params),
}


def _marked_unavailable(definition: dict[str, Any], cause: str) -> dict[str, Any]:
    """A snapshot tool listed while its server cannot be reached: `_meta.simroute` says why."""
    meta = dict(definition.get("_meta") or {})
    meta["simroute"] = {**(meta.get("simroute") or {}), "unavailable": cause}
    return {**definition, "_meta": meta}
