"""Replay of recorded real observations, VCR-style.

The n-th call of a key in a session replays the n-th real observation of that
key from the most recent earlier session that made the call. The key is the
call's server, tool and canonical arguments, minus the ignored argument paths;
ignored paths apply to records made before they were configured, too.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

from router.types import Call, Observation, Provenance
from shadow.canonical import call_key


class ReplaySource(Protocol):
    def replay_observation(self, call_key: str, *, exclude_session: str, occurrence: int) -> tuple[Observation, str] | None: ...

    def real_records_of_tool(self, channel: str, server: str, tool: str, *, exclude_session: str) -> list[dict[str, Any]]: ...


class ReplayBackend:
    def __init__(self, source: ReplaySource, *, ignore_arguments: Sequence[str] = ()) -> None:
        self.source = source
        self.ignore_arguments = tuple(ignore_arguments)

    def key(self, call: Call) -> str:
        """Calls with equal keys are occurrences of the same call."""
        return call_key(call.channel, call.server, call.tool, call.arguments, self.ignore_arguments)

    def lookup(self, call: Call, *, occurrence: int) -> tuple[Observation, str] | None:
        """The replayed observation and the id of the record it came from, or None on a miss."""
        started = time.perf_counter()
        found = self._find(call, occurrence)
        if found is None:
            return None
        recorded, record_id = found
        observation = Observation(
            content=recorded.content,
            structured=recorded.structured,
            is_error=recorded.is_error,
            provenance=Provenance.REPLAY,
            latency_s=time.perf_counter() - started,
        )
        return observation, record_id

    def _find(self, call: Call, occurrence: int) -> tuple[Observation, str] | None:
        if not self.ignore_arguments:  # exact keys: one indexed query
            return self.source.replay_observation(self.key(call), exclude_session=call.session_id, occurrence=occurrence)
        wanted = self.key(call)
        matching = [
            row
            for row in self.source.real_records_of_tool(call.channel, call.server, call.tool, exclude_session=call.session_id)
            if call_key(call.channel, call.server, call.tool, row["arguments"], self.ignore_arguments) == wanted
        ]
        if not matching:
            return None
        source_session = matching[0]["session"]  # rows come newest first
        in_order = sorted((r for r in matching if r["session"] == source_session), key=lambda r: r["step"])
        if len(in_order) < occurrence:
            return None
        row = in_order[occurrence - 1]
        return Observation.from_json(row["observation"]), row["id"]
