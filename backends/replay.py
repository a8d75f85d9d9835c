"""Replay of recorded real observations, VCR-style.

The n-th call of a key in a session replays the n-th real observation of that
key from the most recent earlier session that made the call. The key is the
call's server, tool and canonical arguments, minus the ignored argument paths;
ignored paths apply to records made before they were configured, too.
A channel may bring its own canonical form of arguments (HTTP: normalised URL,
JSON body, noisy query parameters and body fields left out).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from router.types import Call, Observation, Provenance
from shadow.canonical import call_key


class ReplaySource(Protocol):
    def replay_observation(self, call_key: str, *, exclude_session: str, occurrence: int) -> tuple[Observation, str] | None: ...

    def real_records_of_tool(self, channel: str, server: str, tool: str, *, exclude_session: str) -> list[dict[str, Any]]: ...


@dataclass(frozen=True, slots=True)
class CallKeys:
    replay: str  # what replay matches on: canonical arguments, ignored paths left out
    exact: str  # what the record stores: canonical arguments, nothing left out


class ReplayBackend:
    def __init__(
        self,
        source: ReplaySource,
        *,
        ignore_arguments: Sequence[str] = (),
        canonical: Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]] | None = None,
    ) -> None:
        self.source = source
        self.ignore_arguments = tuple(ignore_arguments)
        # Per channel: arguments -> their canonical form for keys.
        self.canonical = dict(canonical or {})

    def canonical_arguments(self, channel: str, arguments: dict[str, Any]) -> dict[str, Any]:
        form = self.canonical.get(channel)
        return form(arguments) if form is not None else arguments

    def keys(self, call: Call) -> CallKeys:
        """Both keys of a call, its arguments put in canonical form once (a hot path:
        the HTTP form parses and re-encodes the URL)."""
        arguments = self.canonical_arguments(call.channel, call.arguments)
        exact = call_key(call.channel, call.server, call.tool, arguments)
        replay = call_key(call.channel, call.server, call.tool, arguments, self.ignore_arguments) if self.ignore_arguments else exact
        return CallKeys(replay, exact)

    def exact_key(self, call: Call) -> str:
        """The key stored with a record: canonical arguments, nothing ignored."""
        return self.keys(call).exact

    def key(self, call: Call) -> str:
        """Calls with equal keys are occurrences of the same call."""
        return self.keys(call).replay

    def lookup(self, call: Call, *, occurrence: int, key: str | None = None) -> tuple[Observation, str] | None:
        """The replayed observation and the id of the record it came from, or None on a
        miss. `key`: the call's replay key when the caller has it already."""
        started = time.perf_counter()
        found = self._find(call, occurrence, key or self.key(call))
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

    def _find(self, call: Call, occurrence: int, wanted: str) -> tuple[Observation, str] | None:
        if not self.ignore_arguments:  # exact keys: one indexed query
            return self.source.replay_observation(wanted, exclude_session=call.session_id, occurrence=occurrence)
        matching = [
            row
            for row in self.source.real_records_of_tool(call.channel, call.server, call.tool, exclude_session=call.session_id)
            if call_key(call.channel, call.server, call.tool, self.canonical_arguments(call.channel, row["arguments"]), self.ignore_arguments)
            == wanted
        ]
        if not matching:
            return None
        source_session = matching[0]["session"]  # rows come newest first
        in_order = sorted((r for r in matching if r["session"] == source_session), key=lambda r: r["step"])
        if len(in_order) < occurrence:
            return None
        row = in_order[occurrence - 1]
        return Observation.from_json(row["observation"]), row["id"]
