"""A proxy provider that remembers its upstream's tools.

Every successful listing is snapshotted in the record store. When the upstream
cannot start (no credentials, offline), the snapshot still lists its tools, so
the sim and replay routes keep serving them; the real route answers with the
upstream's start error.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import mcp_types
from fastmcp.server.providers.proxy import ClientFactoryT, ProxyProvider, ProxyTool, _CacheEntry
from fastmcp.tools.base import Tool

from shadow.sqlite_store import SQLiteStore, StoreError

log = logging.getLogger("simroute.mcp")


class SnapshotProxyProvider(ProxyProvider):
    def __init__(self, client_factory: ClientFactoryT, *, server: str, store: SQLiteStore) -> None:
        super().__init__(client_factory)
        self.server = server
        self.store = store
        self.schema_changed_from: str | None = None  # the previous snapshot's digest, once
        self._tools_by_name: tuple[object, dict[str, Tool]] = (None, {})

    async def _list_tools(self) -> Sequence[Tool]:
        try:
            tools = await super()._list_tools()
        except Exception as exc:  # the upstream is unreachable: fall back to its last known tools
            snapshot = self.store.load_tool_snapshot(self.server)
            if snapshot is None:
                raise
            log.warning("upstream %r unavailable (%s); serving its tools from the snapshot", self.server, exc)
            tools = [ProxyTool.from_mcp_tool(self.client_factory, mcp_types.Tool.model_validate(t)) for t in snapshot]
            self._tools_cache = _CacheEntry(tools, time.monotonic())
            return tools
        definitions = [tool.to_mcp_tool().model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
        try:
            previous = self.store.save_tool_snapshot(self.server, definitions)
        except StoreError as exc:
            log.error("%s", exc)
        else:
            if previous is not None:
                self.schema_changed_from = previous
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
        return self.store.load_tool_snapshot(self.server) or []
