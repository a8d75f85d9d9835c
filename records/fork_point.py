"""Where a session diverged into its fork: the first record answered by a fork, and
what was copied into it. Read from a record's served source (`Source.extra["fork"]`,
no column of its own), for `simroute records`, `simroute explain --session` and the
dashboard's session view. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def fork_of(row: dict[str, Any]) -> dict[str, Any] | None:
    """The fork a stored record's answer came from (its description), or None."""
    source = (row.get("observation") or {}).get("source") or row.get("source") or {}
    fork = source.get("fork") if isinstance(source, dict) else None
    return fork if isinstance(fork, dict) else None


def diverges_here(row: dict[str, Any], seen: set[str]) -> bool:
    """Whether `row` is its session's first call on its fork: the fork numbers its calls
    (`call` 1 is the first); a record written before they were numbered counts as the
    first when its fork's id is not in `seen` (ids met earlier, oldest first; updated)."""
    fork = fork_of(row)
    if fork is None:
        return False
    key = f"{row.get('session')}\0{fork.get('id')}"
    first = fork.get("call") == 1 if isinstance(fork.get("call"), int) else key not in seen
    seen.add(key)
    return first


def divergence(row: dict[str, Any]) -> dict[str, Any]:
    """What `simroute records --json` and `explain --session` say of a divergence point."""
    fork = fork_of(row) or {}
    return {
        "record": row.get("id"),
        "step": row.get("step"),
        "ts": row.get("ts"),
        "fork": fork.get("id"),
        "from": fork.get("from"),
        "container": fork.get("container"),
        "copied": fork.get("copied"),
    }


def divergence_points(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each fork's divergence point among `rows` (oldest first)."""
    seen: set[str] = set()
    return [divergence(row) for row in rows if diverges_here(row, seen)]


def describe(point: dict[str, Any]) -> str:
    """One line: the fork, where it came from and what was copied."""
    copied = point.get("copied") or {}
    folders = copied.get("folders") or copied.get("paths") or {}  # a shell's folders; an MCP server's state paths
    parts = [f"{name} {_size(size)}" for name, size in folders.items() if isinstance(size, int)]
    if copied.get("cwd"):
        parts.append(f"cwd {copied['cwd']}")
    if isinstance(copied.get("variables"), int):
        parts.append(f"{copied['variables']} variables")
    what = ", ".join(parts) or "nothing"
    return f"diverged into fork {point.get('fork')} (from {point.get('from') or '?'}): copied {what}"


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KB" if n < 1024**2 else f"{n / 1024**2:.1f} MB"
