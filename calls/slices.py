"""A session's feature state: the base of every session slice (`calls.Session.slice`).

A leaf module of `calls` (which re-exports these): it imports nothing from
simroute.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar


class SessionSlice:
    """One feature's own per-session state: a typed slice of the session, declared by
    the feature beside its code and read with `session.slice(Kind)` (made on first use)
    or `session.find(Kind)` (None when the session has none).

    A slice kept in the process needs nothing more. A slice shared by router replicas
    names its `key` in the shared session state and is a map of string fields there:
    `fields()` gives it, `merge(fields)` takes in what the shared state holds (another
    replica's changes), `cap()` bounds how many fields it may hold there (new fields
    past the cap are not kept). The session state (records/shared_state/session_state.py)
    loads the slices it is told to with each call's claim (no extra round trip) and
    sends only the fields that changed since (`synced`)."""

    key: ClassVar[str] = ""  # "": kept in the process only
    # The fields as the shared state last held them (what a save need not send again).
    synced: dict[str, str] | None = None

    def fields(self) -> dict[str, str]:
        return {}

    def merge(self, fields: Mapping[str, str]) -> None:
        return None

    def cap(self) -> int | None:
        return None

    def field(self, name: str) -> str | None:
        """One field as `fields()` would give it (a slice with large fields says it cheaper)."""
        return self.fields().get(name)


class CountingSlice(SessionSlice):
    """A slice with counters the replicas claim numbers from (`SessionState.claim`):
    the claimed numbers are kept in `counts` too (a replica alone counts on from them)."""

    counts: dict[str, int]
