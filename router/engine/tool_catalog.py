"""The MCP tool definitions the safety classifier reads annotations from.

Filled at start from the record store's tool snapshots (read-only, straight
from SQLite, so it works whatever the store's own interface) and refreshed by
the MCP front door whenever it lists an upstream's tools. Lookups are
in-memory: the decision path does no I/O.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


class ToolCatalog:
    def __init__(self) -> None:
        self._tools: dict[str, dict[str, Mapping[str, Any]]] = {}

    def update(self, server: str, tools: Sequence[Mapping[str, Any]]) -> None:
        self._tools[server] = {str(t.get("name")): t for t in tools if isinstance(t, Mapping)}

    def lookup(self, server: str, tool: str) -> Mapping[str, Any] | None:
        return self._tools.get(server, {}).get(tool)

    def servers(self) -> list[str]:
        return sorted(self._tools)

    def load_store(self, path: Path) -> int:
        """Add every tool snapshot of the SQLite store at `path` (if it exists); returns
        how many servers were read. Raises OSError when the file is not a readable store."""
        for server, tools in read_tool_snapshots(path).items():
            self.update(server, tools)
        return len(self._tools)


def read_tool_snapshots(path: Path) -> dict[str, list[dict[str, Any]]]:
    """{server: tool definitions} from the store's `tool_snapshots` table, opened
    read-only; empty when the file or the table does not exist."""
    if not path.exists():
        return {}
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error as exc:
        raise OSError(f"cannot open the record store {path} read-only: {exc}") from exc
    try:
        rows = db.execute("SELECT server, tools FROM tool_snapshots").fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return {}
        raise OSError(f"cannot read tool snapshots from {path}: {exc}") from exc
    except sqlite3.Error as exc:
        raise OSError(f"cannot read tool snapshots from {path}: {exc}") from exc
    finally:
        db.close()
    snapshots = {}
    for server, body in rows:
        try:
            tools = json.loads(body)
        except ValueError as exc:
            raise OSError(f"{path}: the tool snapshot of {server!r} is not JSON: {exc}") from exc
        snapshots[str(server)] = [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
    return snapshots
