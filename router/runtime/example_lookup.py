"""Recorded real examples of a call's tool, for the world model's prompts (the
demonstrations): queried from the store as the router's replay finds them (the
call's keys, the token namespaces' visibility), with held-out sessions withheld
where a measurement or a training set must not see them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from backends.replay import ReplayBackend
from calls import Call
from records.store.protocol import RecordStore
from router.config import Config

# Recorded rows a domain ranks its examples from: a capped, indexed store query.
EXAMPLE_CANDIDATES = 32
_EXAMPLE_DEADLINE_S = 10.0
_FETCHED_KEPT = 1024
_WITHHELD_OVERFETCH = 4


class ExampleLookup:
    """Recorded real examples of a call's tool for the prompt builders, which run in a
    worker thread: the store query is awaited on the event loop (any store, SQLite or
    Redis, async at the edge) while the builder's thread waits for its rows."""

    def __init__(self, store: RecordStore, *, limit: int = EXAMPLE_CANDIDATES) -> None:
        self.store = store
        self.limit = limit
        self.loop: asyncio.AbstractEventLoop | None = None
        # set by the runtime: the call's replay key (the store's lookup; None: any key)
        self.call_key_of: Callable[[Call], str | None] = lambda call: None
        self.exact_key_of: Callable[[Call], str] = lambda call: (
            ""
        )  # set by the runtime: the call's stored key (the domains' ranking)
        # set by the runtime: whether a row recorded in one session may be shown to another
        # (with tokens, another token's recordings are not, unless its namespace is shared)
        self.visible: Callable[[str, str], bool] = lambda session_id, recorded_in: True
        # Set by `simroute compare-models`: the held-out sessions, whose answers are never
        # shown (a model measured on a call must not be shown that call's real answer from
        # a sibling held-out session: that would measure the lookup, not the model).
        self.withheld: Callable[[str], bool] | None = None
        # ... and the session prefixes it may be shown, for the store's query (None: all)
        self.namespaces: Callable[[str], tuple[str, ...] | None] = lambda session_id: None
        # Prefetched rows by the call object's identity (its arguments make it unhashable), taken once.
        self._fetched: dict[int, tuple[Call, list[dict[str, Any]]]] = {}

    def __call__(self, call: Call) -> list[dict[str, Any]]:
        fetched = self._fetched.pop(id(call), None)
        if fetched is not None and fetched[0] is call:
            return fetched[1]
        if self.loop is None:
            return []
        return asyncio.run_coroutine_threadsafe(self._query(call), self.loop).result(_EXAMPLE_DEADLINE_S)

    async def prefetch(self, call: Call) -> None:
        """Fetch `call`'s rows on the loop before the prompt builder's thread asks for
        them: a worker thread that waits on the loop holds one of the few worker
        threads, and when the loop is slow (a garbage collection) they all pile up."""
        self._fetched[id(call)] = (call, await self._query(call))
        while len(self._fetched) > _FETCHED_KEPT:  # rows nobody asked for (the call failed first)
            self._fetched.pop(next(iter(self._fetched)))

    def forget(self) -> None:
        """Drops the prefetched rows nobody asked for (an export prefetches for each
        record, and a record that makes no example never asks for its rows)."""
        self._fetched.clear()

    async def _query(self, call: Call) -> list[dict[str, Any]]:
        withheld = self.withheld
        # Withheld rows are dropped after the capped query: ask for more so the training
        # side still fills the cap when held-out sessions are among the newest.
        limit = self.limit if withheld is None else self.limit * _WITHHELD_OVERFETCH
        rows = await self.store.examples(
            call.channel,
            call.server,
            call.tool,
            exclude_session=call.session_id,
            call_key=self.call_key_of(call),
            limit=limit,
            namespaces=self.namespaces(call.session_id),
        )
        shown = [row for row in rows if self.visible(call.session_id, str(row.get("session") or ""))]
        if withheld is not None:
            shown = [row for row in shown if not withheld(str(row.get("session") or ""))][: self.limit]
        return shown


def keyed_lookup(store: RecordStore, keys: ReplayBackend) -> ExampleLookup:
    """A lookup that finds what the router's finds: the call's replay and stored keys and the
    token namespaces' visibility of `keys` (the router's replay backend), and never a
    session `keys` withholds (compare-models' held-out side, an export's test side)."""
    lookup = ExampleLookup(store)
    lookup.call_key_of = lambda call: keys.keys(call).replay
    lookup.exact_key_of = lambda call: keys.keys(call).exact
    lookup.visible = keys.visible
    lookup.namespaces = keys.visible_namespaces
    lookup.withheld = keys.withheld
    return lookup


def replay_keys(cfg: Config, store: RecordStore, *, withheld: Callable[[str], bool] | None = None) -> ReplayBackend:
    """The call keys the router computes (replay's: ignored arguments, canonical HTTP,
    token namespaces), for a lookup outside a running router (export, compare-models),
    with the `withheld` sessions never visible."""
    from records.store.protocol import ReplaySource
    from router.auth import configured_tokens

    return ReplayBackend(
        store,
        ignore_arguments=cfg.replay.ignore_arguments,
        canonical={"http": cfg.http_canonical()},
        source=ReplaySource(cfg.replay.from_),
        scheme_inputs=cfg.replay_key_scheme(),
        namespaced=configured_tokens(cfg.service.tokens).enabled,
        shared_namespaces=cfg.service.shared_namespaces,
        withheld=withheld,
    )
