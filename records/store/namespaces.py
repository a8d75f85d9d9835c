"""Token namespaces in store queries.

With tokens on, a session id is `token/session` (router/auth.py), so a token's
records are the sessions whose id starts with its prefix (`alice/`). A query
limited to some namespaces takes their prefixes; SQLite reads each as a range of
the session column (`alice/` <= session < `alice0`: '0' follows '/'), so an
index on the session serves it; Redis filters the rows it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def prefix_range(prefix: str) -> tuple[str, str]:
    """[low, high) of the session ids starting with `prefix` (which ends with '/')."""
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def in_namespaces(session: str, prefixes: Sequence[str] | None) -> bool:
    """Whether a session lives in one of `prefixes` (None: no limit)."""
    return prefixes is None or any(session.startswith(prefix) for prefix in prefixes)


def sql_clause(prefixes: Sequence[str] | None, column: str = "session") -> tuple[str, list[Any]]:
    """A SQL condition (and its parameters) limiting `column` to `prefixes`; '' for no limit.
    No prefix at all matches nothing."""
    if prefixes is None:
        return "", []
    if not prefixes:
        return "0", []
    parts: list[str] = []
    params: list[Any] = []
    for prefix in prefixes:
        parts.append(f"({column} >= ? AND {column} < ?)")
        params += prefix_range(prefix)
    return "(" + " OR ".join(parts) + ")", params
