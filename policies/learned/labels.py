"""Labels for the two candidate routes, read from shadow records.

- **sim**: a shadowed call (both sides recorded) is acceptable when its
  divergence is at most `max_divergence` and its kind is not `status` or
  `structure` (an error for a success, a missing key: never acceptable).
- **replay**: a real answer compared with the most recent earlier real answer of
  the same replay key, from any session (this one included): what replay would
  have served instead. No earlier answer, no label. Compared with the built-in
  noise detectors only: noise *learned* from real-vs-real pairs would call a
  counter's changing value noise, and replaying a counter is exactly what must
  not look faithful.

Rows are record JSON objects (`Record.to_json()`), from SQLite or Redis alike.
`LabelBuilder` is incremental: the router feeds it new records off the decision
path; `simroute train` feeds it everything at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from policies.learned.features import CallFacts, ToolStats, tool_key
from router.types import Observation
from shadow.compare.divergence import BUILTIN_NOISE, compare

UNACCEPTABLE_KINDS = frozenset({"status", "structure"})
ROUTES = ("sim", "replay")
MAX_REMEMBERED_KEYS = 100_000  # replay keys whose last real answer is kept (oldest forgotten first)


@dataclass(frozen=True, slots=True)
class Label:
    route: str  # "sim" | "replay"
    acceptable: bool
    divergence: float
    kind: str
    facts: CallFacts
    replay_key: str
    ts: float
    record_id: str
    latency_s: float  # how long the candidate route's answer took (sim) or 0 (replay)


def acceptable(divergence: float, kind: str | None, *, max_divergence: float) -> bool:
    return divergence <= max_divergence and (kind or "none") not in UNACCEPTABLE_KINDS


def is_real_answer(row: dict[str, Any]) -> bool:
    return row.get("provenance") == "real" and row.get("status", "complete") == "complete" and bool(row.get("observation"))


class LabelBuilder:
    """Turns records, in time order, into labels, keeping per-tool statistics and
    the set of replay keys that have a real recording."""

    def __init__(self, *, max_divergence: float = 0.2) -> None:
        self.max_divergence = max_divergence
        self.stats: dict[str, ToolStats] = {}
        # replay key -> (channel, its most recent real observation)
        self._last_real: OrderedDict[str, Observation] = OrderedDict()
        self.recorded_keys: set[str] = set()

    def add(self, row: dict[str, Any]) -> list[Label]:
        """The labels one record gives (none, sim, replay or both); it must come after
        every earlier record of its replay key."""
        if row.get("status", "complete") != "complete":
            return []
        key = tool_key(row["channel"], row["server"], row["tool"])
        stats = self.stats.setdefault(key, ToolStats())
        # The facts as they were before this call: per-tool stats up to now.
        facts = CallFacts(
            row["channel"],
            row["server"],
            row["tool"],
            row.get("arguments") or {},
            row.get("safety_class"),
            int(row.get("step") or 0),
            replace(stats),
        )
        out: list[Label] = []
        replay_key = row.get("replay_key") or row.get("call_key") or ""
        if row.get("shadow") and row.get("divergence") is not None and is_real_answer(row):
            divergence, kind = float(row["divergence"]), row.get("divergence_kind") or "content"
            ok = acceptable(divergence, kind, max_divergence=self.max_divergence)
            latency = float((row.get("shadow") or {}).get("latency_s") or 0.0)
            out.append(Label("sim", ok, divergence, kind, facts, replay_key, row["ts"], row["id"], latency))
            masked = len((row.get("divergence_evidence") or {}).get("masked") or [])
            stats.add("sim", acceptable=ok, divergence=divergence, masked=masked)
            stats.sim_latency += latency
            stats.sim_answers += 1
        elif row.get("provenance") == "sim" and not (row.get("observation") or {}).get("is_error"):
            stats.sim_latency += float(row.get("latency_ms") or 0.0) / 1000
            stats.sim_answers += 1
        if is_real_answer(row):
            stats.real_latency += float(row.get("latency_ms") or 0.0) / 1000
            stats.real_answers += 1
            observation = Observation.from_json(row["observation"])
            previous = self._last_real.get(replay_key)
            if previous is not None:
                result = compare(previous, observation, channel=row["channel"], noise=BUILTIN_NOISE)
                ok = acceptable(result.score, result.kind, max_divergence=self.max_divergence)
                out.append(Label("replay", ok, result.score, result.kind, facts, replay_key, row["ts"], row["id"], 0.0))
                stats.add("replay", acceptable=ok, divergence=result.score)
            self._remember(replay_key, observation)
        return out

    def _remember(self, replay_key: str, observation: Observation) -> None:
        self._last_real[replay_key] = observation
        self._last_real.move_to_end(replay_key)
        self.recorded_keys.add(replay_key)
        while len(self._last_real) > MAX_REMEMBERED_KEYS:
            forgotten, _ = self._last_real.popitem(last=False)
            self.recorded_keys.discard(forgotten)

    def add_all(self, rows: Iterable[dict[str, Any]]) -> list[Label]:
        out: list[Label] = []
        for row in sorted(rows, key=lambda r: (r["ts"], r["id"])):
            out.extend(self.add(row))
        return out


def labels_from_rows(rows: Iterable[dict[str, Any]], *, max_divergence: float = 0.2) -> list[Label]:
    return LabelBuilder(max_divergence=max_divergence).add_all(rows)
