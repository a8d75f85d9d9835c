"""A proxy provider that remembers its upstream's tools.

Every live listing is reconciled with the tool-definition pins (router/engine/pin_guard.py):
the agent is served each changed tool as pinned, and that is what is snapshotted in the
record store (so prompts, the safety gate and episodes read it too). When the upstream
cannot start (no credentials, offline), the snapshot still lists its tools, so
the sim and replay routes keep serving them; the real route answers with the
upstream's start error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

import anyio
import mcp_types
from fastmcp.prompts.base import Prompt
from fastmcp.resources.base import Resource
from fastmcp.resources.template import ResourceTemplate
from fastmcp.server.providers.proxy import ClientFactoryT, ProxyProvider, ProxyTool, _CacheEntry
from fastmcp.tools.base import Tool

from backends.mcp.upstream import UpstreamError
from router.engine.pin_guard import PinGuard
from shadow.store.protocol import RecordStore, StoreError

log = logging.getLogger("simroute.mcp")


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
        # Episodes wait for one another's first listing: a thousand simulated episodes
        # reset on a fresh store start one upstream to list, not a thousand.
        self._first_listing = asyncio.Lock()

    async def _listed[T](self, kind: str, listing: Callable[[], Awaitable[T]]) -> T:
        try:
            with anyio.fail_after(self.list_timeout_s):
                return await listing()
        except TimeoutError as exc:
            raise UpstreamError(f"upstream {self.server!r} did not list its {kind} within {self.list_timeout_s:g}s") from exc

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
        try:
            listed_tools = await self._listed("tools", super()._list_tools)
            listed = [tool.to_mcp_tool().model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed_tools]
            definitions = listed if self.pins is None else await self.pins.reconcile(self.server, listed)
        except Exception as exc:  # the listing's boundary: an upstream unreachable or hung, pins unreadable (any failure) fall back to its last known tools, else re-raised
            snapshot = self.store.tool_snapshot(self.server)
            if snapshot is None:
                self.listing_error = f"{type(exc).__name__}: {exc}"
                raise
            log.warning("tools of %r not listed live (%s); serving them from the snapshot", self.server, exc)
            return self._from_snapshot(snapshot)
        self.listing_error = None
        tools = self._served(listed_tools, listed, definitions)
        if self.on_tools is not None:
            self.on_tools(self.server, definitions)
        try:
            previous = await self.store.save_tool_snapshot(self.server, definitions)
        except StoreError as exc:
            log.error("%s", exc)
        else:
            if previous is not None:
                self.schema_changed_from = previous
        return tools

    def _served(self, listed_tools: Sequence[Tool], listed: list[dict], served: list[dict]) -> list[Tool]:
        """The tools the agent is served: each as listed, but a changed one as pinned."""
        as_listed: dict[object, tuple[Tool, dict]] = {}
        for tool, definition in zip(listed_tools, listed, strict=True):
            as_listed.setdefault(definition.get("name"), (tool, definition))  # a name listed twice: the first is the tool (as pinned)
        tools: list[Tool] = []
        for definition in served:
            tool, listed_definition = as_listed.get(definition.get("name"), (None, None))
            if tool is not None and listed_definition == definition:
                tools.append(tool)
            else:
                tools.append(ProxyTool.from_mcp_tool(self.client_factory, mcp_types.Tool.model_validate(definition)))
        self._tools_cache = _CacheEntry(tools, time.monotonic())
        return tools

    async def relist(self) -> None:
        """List the upstream's tools again now (its tools changed): what changed is
        reconciled with the pins before the next call is routed."""
        self.forget("tools")
        await self._list_tools_live()

    def _from_snapshot(self, snapshot: list[dict]) -> list[Tool]:
        if self.on_tools is not None:
            self.on_tools(self.server, snapshot)
        tools = [ProxyTool.from_mcp_tool(self.client_factory, mcp_types.Tool.model_validate(t)) for t in snapshot]
        self._tools_cache = _CacheEntry(tools, time.monotonic())
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

    def snapshot(self) -> list[dict]:
        """The upstream's tool definitions as last seen (for prompts and records)."""
        return self.store.tool_snapshot(self.server) or []
