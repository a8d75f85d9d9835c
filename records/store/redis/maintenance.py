"""Keeping the Redis store's records true over time: records left `started` by a
router that died are marked interrupted, replay keys are recomputed when the key
configuration changes, and old records are pruned with their index entries
(named recordings never)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calls import tool_key
from records.store.redis.dashboard import SEP, sub_field
from records.store.redis.writes import RecordWrites
from records.store.store_rules import interrupt, orphaned, prunable


class StoreMaintenance(RecordWrites):
    async def interrupt_orphans(self, owner_is_alive: Callable[[str], bool]) -> int:
        ids = await self._run("reading started records", lambda r: r.zrange(self._key("started"), 0, -1))
        gone = [interrupt(row) for row in await self._bodies(ids) if orphaned(row.get("owner"), owner_is_alive)]
        if gone:
            await self.upsert(gone)
        return len(gone)

    async def rekey(self, scheme: str, replay_key_of: Callable[[dict[str, Any]], str]) -> int:
        """Once per replay-key configuration change: every record is read (O(N)), the
        changed ones re-indexed with their occurrences recounted per session."""
        marker = self._key("key_scheme")
        if await self._run("reading the key scheme", lambda r: r.get(marker)) == scheme:
            return 0
        ids = await self._run("listing records", lambda r: r.zrange(self._key("all"), 0, -1))
        changed_sessions: set[str] = set()
        for start in range(0, len(ids), 1000):
            for row in await self._bodies(ids[start : start + 1000]):
                if row.get("key_scheme") != scheme and replay_key_of(row) != row.get("replay_key"):
                    changed_sessions.add(row["session"])
        changed = 0
        for session in changed_sessions:
            members = await self._command("reading a session", "zrange", self._key("session", session), 0, -1)
            counts: dict[str, int] = {}
            rows = []
            for row in await self._bodies(members):
                row["replay_key"], row["key_scheme"] = replay_key_of(row), scheme
                counts[row["replay_key"]] = counts.get(row["replay_key"], 0) + 1
                row["occurrence"] = counts[row["replay_key"]]
                rows.append(row)
            changed += len(rows)
            await self.upsert(rows)
        await self._run("writing the key scheme", lambda r: r.set(marker, scheme))
        return changed

    async def prune(self, *, before_ts: float | None = None, keep_newest: int | None = None) -> int:
        """Delete finished records older than `before_ts` and beyond the newest
        `keep_newest`, with their index entries; named recordings are never pruned."""
        all_key = self._key("all")
        candidates: list[str] = []
        if before_ts is not None:
            candidates += await self._run(
                "finding old records", lambda r: r.zrangebyscore(all_key, "-inf", f"({before_ts}")
            )
        if keep_newest is not None:
            candidates += await self._run("finding old records", lambda r: r.zrange(all_key, 0, -(keep_newest + 1)))
        removed = 0
        for start in range(0, len(candidates), 500):
            rows = [row for row in await self._bodies(sorted(set(candidates[start : start + 500]))) if prunable(row)]
            if not rows:
                continue

            async def delete(r, rows=rows) -> int:
                pipe = r.pipeline(transaction=False)
                for row in rows:
                    await self._prune(args=self._prune_args(row), client=pipe)
                return sum(await pipe.execute())

            removed += await self._run("pruning records", delete)
        return removed

    def _prune_args(self, row: dict[str, Any]) -> list[Any]:
        return [
            self.prefix,
            row["id"],
            row["ts"],
            row["session"],
            row.get("replay_key") or row["call_key"],
            str(row.get("occurrence") or 0),
            tool_key(row["channel"], row["server"], row["tool"]),
            row["channel"],
            row["route"],
            row["provenance"],
            SEP.join((row["channel"], row["server"], row["tool"])),
            "" if row.get("divergence") is None else repr(float(row["divergence"])),
            row.get("divergence_kind") or "none",
            SEP.join((row["channel"], row["server"])),
            sub_field(row),
        ]
