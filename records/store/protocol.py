"""What a record store does: the one protocol every store implements.

The engine, replay, the world model's example lookup, shadow work and the
command line all go through it. Implementations keep every call off the event
loop (SQLite: a writer thread and a reader thread; Redis: an async client), and
every query the hot path needs is an indexed lookup with a cap, never a scan.

Record rows are the JSON objects of `Record.to_json()`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, Self

from calls import Observation
from records.errors import RecordsError
from records.record import Record

# The store's errors; who raises and who catches them: records/errors.py.


class StoreError(RecordsError, RuntimeError):
    """The record store could not be opened, read or written (a store raises it,
    its driver's error chained; the record log spools the record)."""


class StoreBusy(StoreError):
    """The store stayed locked past its busy timeout (another writer holds it)."""


class RecordError(RecordsError, RuntimeError):
    """A record could be written neither to the store nor to the spool: the call
    must not proceed (write-ahead) or must not be served unrecorded."""


@dataclass(frozen=True, slots=True)
class ReplaySource:
    """Where replay looks: a named recording, or (name None) the most recent
    earlier session that made the call."""

    recording: str | None = None


@dataclass(frozen=True, slots=True)
class ReplayRow:
    """One occurrence in the replay source: what it observed and how it was served."""

    record_id: str
    session: str
    provenance: str
    observation: Observation
    perturbed: bool = False  # a perturbation delayed, changed or replaced the answer: never replayed


@dataclass(frozen=True, slots=True)
class RecordingInfo:
    name: str
    sessions: int
    records: int
    first_ts: float
    last_ts: float


@dataclass(frozen=True, slots=True)
class RecordFilter:
    """Which records a dashboard view covers: a time range and equality filters
    (None: any). Stores turn it into an indexed query."""

    since: float
    until: float | None = None
    channel: str | None = None
    server: str | None = None
    tool: str | None = None
    route: str | None = None
    session: str | None = None
    divergent: bool = False
    # With tokens: the session prefixes (`alice/`) the view may show (None: every session).
    namespaces: tuple[str, ...] | None = None


class DashboardQueries(Protocol):
    """Aggregates and pages the dashboard reads (computed in the store, never in
    Python over all records)."""

    async def overview(self, where: RecordFilter, *, bucket_s: float) -> list[dict[str, Any]]:
        """Per time bucket, route and channel: calls, shadowed calls, divergent calls."""

    async def fidelity(self, where: RecordFilter) -> list[dict[str, Any]]:
        """Per channel, server and tool: calls, shadow pairs, mean divergence, counts by divergence kind."""

    async def model_fidelity(self, where: RecordFilter) -> dict[str, Any]:
        """Per model that answered a simulated call (records/store/model_rows.py): calls,
        shadow pairs, mean divergence, error answers; over the range's newest records."""

    async def page(
        self, where: RecordFilter, *, before: str | None = None, after: str | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        """Records newest first: those with an id below `before` (paging back) or above
        `after` (live updates: ids are time-ordered)."""

    async def record(self, record_id: str) -> dict[str, Any] | None: ...


class RecordStore(DashboardQueries, Protocol):
    """The record store protocol (see module doc)."""

    async def open(self) -> Self:
        """Ready for use (schema, connections); the store itself."""
        ...

    async def upsert(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert or replace records by id, in order (a later row for an id wins).
        Raises StoreBusy when locked past the busy timeout, StoreError otherwise."""

    async def writable(self) -> bool:
        """Whether a write would go through now (asked without waiting)."""

    async def replay_session(
        self, replay_key: str, *, exclude_session: str, source: ReplaySource, servable: bool = True
    ) -> str | None:
        """The session replay reads `replay_key` from: the most recent other session
        (of the named recording, when given) with a servable answer to the call
        (records/servable.py); `servable=False`: the most recent that made the call at
        all, to say why it is no source (None where the store cannot tell)."""

    async def replay_row(self, replay_key: str, *, session: str, occurrence: int) -> ReplayRow | None:
        """The `occurrence`-th (1-based) call of `replay_key` in `session`."""

    async def examples(
        self,
        channel: str,
        server: str,
        tool: str,
        *,
        exclude_session: str,
        call_key: str | None,
        limit: int,
        namespaces: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """Real records of one tool from other sessions, at most `limit`: those of the
        same call (`call_key`: its replay key) first, newest first, then the tool's newest;
        with `namespaces` (session prefixes), only from those (in the query, so another
        token's records never use up the limit)."""

    async def tool_sessions(
        self,
        channel: str,
        server: str,
        tool: str,
        *,
        exclude_session: str,
        limit: int,
        namespaces: Sequence[str] | None = None,
    ) -> list[str]:
        """The sessions with a real record of one tool, other than `exclude_session`, the
        one with the newest such record first, at most `limit` (read from the tool's newest
        real records, a capped number: records/store/tool_sessions.py); with `namespaces`
        (session prefixes), only from those."""

    async def pending(self, *, limit: int = 1000) -> list[dict[str, Any]]:
        """Records whose off-path shadow work has not finished, oldest first."""

    async def session_records(self, session: str, *, before_step: int, limit: int) -> list[Record]:
        """A session's last `limit` records before `before_step`, in step order."""

    async def recent(self, *, limit: int | None = None, **filters: Any) -> list[dict[str, Any]]:
        """Records, oldest first; with `limit`, the newest `limit`."""

    def session_ids(self, *, prefix: str = "", page: int = 500) -> AsyncIterator[str]:
        """Every session id (those starting with `prefix`), read `page` at a time (an
        export streams the whole store with it). A session may be named twice (Redis's SCAN)."""

    def session_rows(self, session: str, *, page: int = 500) -> AsyncIterator[dict[str, Any]]:
        """Every record of `session` in (step, id) order, read `page` at a time."""

    async def learning_rows(self, *, since: float, limit: int) -> list[dict[str, Any]]:
        """Records from `since` (a timestamp, inclusive), oldest first, at most `limit`
        (the learned router reads new records off the decision path with this)."""

    async def writes_between(self, channel: str, server: str, *, since: float, until: float) -> bool:
        """Whether a record of a call that may have written to (channel, server) — one that
        may have reached the real side and is not known to read only — spans a moment
        from `since` to `until`, whichever process made it (records/store/server_writes.py).
        The noise learner asks before it learns from two answers of that server."""

    async def recordings(self, *, namespaces: Sequence[str] | None = None) -> list[RecordingInfo]:
        """The named recordings, newest first; with `namespaces` (session prefixes), counted
        over those namespaces' sessions only (a recording none of them made is left out)."""

    async def aggregates(self) -> dict[str, Any]:
        """Counts by channel, route, provenance and status (for the dashboard and metrics)."""

    async def interrupt_orphans(self, owner_is_alive: Callable[[str], bool]) -> int:
        """Mark `started` records whose owner is gone as `interrupted`; returns how many."""

    async def rekey(self, scheme: str, replay_key_of: Callable[[dict[str, Any]], str]) -> int:
        """Recompute stored replay keys made under another key scheme (the replay key
        config changed); returns how many changed."""

    def tool_snapshot(self, server: str) -> list[dict[str, Any]] | None:
        """The last known tool definitions of `server`, held in memory (no I/O)."""

    async def prune(self, *, before_ts: float | None = None, keep_newest: int | None = None) -> int:
        """Delete finished records older than `before_ts` and beyond the newest
        `keep_newest`; named recordings are never pruned. Returns how many went."""

    async def save_tool_snapshot(self, server: str, tools: list[dict[str, Any]]) -> str | None: ...

    async def load_tool_snapshot(self, server: str) -> list[dict[str, Any]] | None: ...

    # Tool-definition pins (router/engine/tool_pin_checks.py): rows are `Pin.to_row()` / `ToolChange.to_row()`.

    async def pins(self, server: str | None = None) -> list[dict[str, Any]]:
        """The accepted tool definitions (of `server`), by server and tool."""

    async def add_pins(self, pins: Sequence[dict[str, Any]]) -> None:
        """Pin tools seen for the first time; a tool already pinned keeps its pin."""

    async def pin_changes(self, server: str | None = None, *, status: str | None = None) -> list[dict[str, Any]]:
        """Changes later listings showed (of `server`, with `status`), oldest first."""

    async def add_pin_change(self, change: dict[str, Any]) -> bool:
        """Record a pending change (an older pending change of the tool is superseded);
        False when the same change is already pending."""

    async def end_pin_changes(self, server: str, tools: Sequence[str] | None, status: str) -> list[dict[str, Any]]:
        """End `server`'s pending changes (of `tools`; None: all) with `status`; `accepted`
        pins their definitions. Returns the changes ended."""

    async def records_by_prefix(self, prefix: str, *, limit: int = 2) -> list[dict[str, Any]]:
        """At most `limit` records whose id starts with `prefix` (lower-case hex)."""

    async def count(self) -> int: ...

    async def aclose(self) -> None: ...
