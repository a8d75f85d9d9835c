"""The rules every record store keeps, written once for both (as judge_summary.py is
for the judge's view); each store reads and writes its own way (SQL, Redis hashes
and Lua), the decisions are these:

- a call a dead router left `started` is interrupted, and its record says so;
- pruning never deletes a named recording's records nor an unfinished one's
  (`started`: its call may still answer; `pending`: its shadow work is owed);
- a change to a pinned tool's definition is `pending` until a person ends it
  (`accepted`: the new definition is pinned; `rejected`), a newer change of the same
  tool supersedes an older pending one, and the same change seen again while it is
  pending (another listing, another replica) is not recorded twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

INTERRUPTED_NOTE = "interrupted: its router stopped before the call finished"
UNFINISHED = ("started", "pending")  # statuses pruning keeps
PRUNABLE_SQL = f"recording IS NULL AND status NOT IN ({', '.join(repr(status) for status in UNFINISHED)})"
PENDING, SUPERSEDED, ACCEPTED = "pending", "superseded", "accepted"


# --- interrupted calls -------------------------------------------------------------------


def orphaned(owner: str | None, owner_is_alive: Callable[[str], bool]) -> bool:
    """Whether a `started` record's router is gone (no owner recorded: gone too)."""
    return not owner or not owner_is_alive(owner)


def interrupt(row: dict[str, Any]) -> dict[str, Any]:
    """The stored row marked interrupted (in place), its note saying why."""
    row["status"] = "interrupted"
    row["note"] = "; ".join(note for note in (row.get("note"), INTERRUPTED_NOTE) if note)
    return row


# --- pruning ------------------------------------------------------------------------------


def prunable(row: dict[str, Any]) -> bool:
    """Whether pruning may delete this stored row (the SQL form: `PRUNABLE_SQL`)."""
    return not row.get("recording") and row.get("status") not in UNFINISHED


# --- pin changes --------------------------------------------------------------------------


def superseded_by[K](change: dict[str, Any], pending: Mapping[K, dict[str, Any]]) -> list[K] | None:
    """Which of the pending changes (by the store's own key: a row id, a hash field) a
    new `change` supersedes: those of its tool; None: the same change is pending
    already and is not recorded again."""
    same_tool = [k for k, c in pending.items() if c["server"] == change["server"] and c["tool"] == change["tool"]]
    if any(pending[k]["new_digest"] == change["new_digest"] for k in same_tool):
        return None
    return same_tool


def ending[K](pending: Mapping[K, dict[str, Any]], server: str, tools: Sequence[str] | None) -> list[K]:
    """Which of the pending changes a person ends: those of `server` (of `tools`; None: all)."""
    return [k for k, c in pending.items() if c["server"] == server and (tools is None or c["tool"] in tools)]


def pin_of(change: dict[str, Any], now: float) -> dict[str, Any]:
    """The pin an accepted change leaves: its new definition."""
    return {
        "server": change["server"],
        "tool": change["tool"],
        "digest": change["new_digest"],
        "ts": now,
        "definition": change["definition"],
    }
