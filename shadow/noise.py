"""The noise model: which paths of a tool's answers differ between two real calls.

Diffy's idea, without extra traffic: real-vs-real pairs of the same call key
(two real calls with the same arguments, already in the store) show which
paths change on their own. A path is noisy for a tool when the pairs disagree
there often enough: the Wilson lower bound of the disagreement rate over at
least `min_pairs` pairs reaches `min_rate`. A comparison then masks those paths
(see `Noise`), beside the built-in detectors that apply from the first call.

The learning is pure (`NoiseModel`); where the counts live is a `NoiseStore`
(in memory here; the record stores implement the same protocol).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from router.types import Observation
from shadow.canonical import tool_key as tool_key_of
from shadow.divergence import NO_NOISE, Noise, compare


@dataclass(frozen=True, slots=True)
class NoiseRule:
    """What counts as noise (the fields of the `shadow.noise` config section)."""

    min_pairs: int = 3
    min_rate: float = 0.5
    z: float = 1.0  # confidence of the lower bound (0: the plain rate)
    builtin_detectors: bool = True  # timestamps, uuids, request ids, durations, sizes

    def is_noisy(self, disagreements: int, pairs: int) -> bool:
        return pairs >= self.min_pairs and wilson_lower_bound(disagreements, pairs, self.z) >= self.min_rate


def wilson_lower_bound(successes: int, trials: int, z: float) -> float:
    """The lower end of the Wilson score interval of a binomial rate."""
    if trials <= 0:
        return 0.0
    p = successes / trials
    denominator = 1 + z * z / trials
    centre = p + z * z / (2 * trials)
    margin = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    return max(0.0, (centre - margin) / denominator)


@dataclass(slots=True)
class NoiseStats:
    """One tool's counts: real-vs-real pairs seen, and per path how many disagreed there.
    (A path's pairs are the tool's pairs: a path absent from some answers is less
    likely to be called noisy, never more.)"""

    pairs: int = 0
    disagreements: dict[str, int] = field(default_factory=dict)

    def add(self, disagreeing: Iterable[str]) -> None:
        self.pairs += 1
        for path in set(disagreeing):
            self.disagreements[path] = self.disagreements.get(path, 0) + 1

    def noisy(self, rule: NoiseRule) -> frozenset[str]:
        return frozenset(path for path, count in self.disagreements.items() if rule.is_noisy(count, self.pairs))


class NoiseStore(Protocol):
    """Where the noise counts live (the record store implements it)."""

    async def noise_stats(self, tool_key: str) -> NoiseStats: ...

    async def add_noise_observation(self, tool_key: str, disagreeing: Iterable[str], *, name: str = "") -> None:
        """Count one more real-vs-real pair of `tool_key` ("server.tool" `name`), disagreeing at `disagreeing`."""
        ...


class MemoryNoiseStore:
    def __init__(self) -> None:
        self.stats: dict[str, NoiseStats] = defaultdict(NoiseStats)

    async def noise_stats(self, tool_key: str) -> NoiseStats:
        return self.stats[tool_key]

    async def add_noise_observation(self, tool_key: str, disagreeing: Iterable[str], *, name: str = "") -> None:
        self.stats[tool_key].add(disagreeing)


def pair_disagreements(first: Observation, second: Observation, *, channel: str) -> set[str]:
    """Where two real answers to the same call disagree, as noise-model paths."""
    return {d.noise_key for d in compare(first, second, channel=channel, noise=NO_NOISE).differences}


async def noise_for_tool(store: NoiseStore | None, tool_key: str, *, rule: NoiseRule = NoiseRule()) -> Noise:
    """The noise mask of one tool, from the store's counts (built-in detectors only without a store)."""
    paths = (await store.noise_stats(tool_key)).noisy(rule) if store is not None else frozenset()
    return Noise(builtin=rule.builtin_detectors, paths=paths)


def pair_of_records(previous: dict[str, Any], current: dict[str, Any]) -> tuple[str, set[str]] | None:
    """(tool key, disagreeing paths) of two real records of the same call key (rows as
    `Record.to_json()` writes them), or None when they are not such a pair. For
    learning at write time: a new real record and the previous one of its call key."""
    if previous["call_key"] != current["call_key"] or not (_is_real(previous) and _is_real(current)):
        return None
    first, second = Observation.from_json(previous["observation"]), Observation.from_json(current["observation"])
    return tool_key_of(current["channel"], current["server"], current["tool"]), pair_disagreements(first, second, channel=current["channel"])


def _is_real(row: dict[str, Any]) -> bool:
    return row.get("provenance") == "real" and bool(row.get("observation"))


@dataclass(frozen=True, slots=True)
class NoiseRow:
    tool: str  # server.tool
    path: str
    disagreements: int
    pairs: int
    lower_bound: float
    noisy: bool


class NoiseModel:
    """The noise table of many tools, learned from real-vs-real pairs."""

    def __init__(self, *, rule: NoiseRule = NoiseRule()) -> None:
        self.rule = rule
        self.stats: dict[str, NoiseStats] = defaultdict(NoiseStats)
        self.names: dict[str, str] = {}  # tool key -> "server.tool"

    def observe(self, tool_key: str, first: Observation, second: Observation, *, channel: str) -> set[str]:
        disagreeing = pair_disagreements(first, second, channel=channel)
        self.stats[tool_key].add(disagreeing)
        return disagreeing

    def noise_for(self, tool_key: str) -> Noise:
        stats = self.stats.get(tool_key)
        return Noise(builtin=self.rule.builtin_detectors, paths=stats.noisy(self.rule) if stats else frozenset())

    def learn_from_records(self, rows: Iterable[dict[str, Any]]) -> NoiseModel:
        """Learn from real records (rows as `Record.to_json()` writes them): per call
        key, each real answer against the one before it, in time order."""
        by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            if _is_real(row):
                by_key[row["call_key"]].append(row)
        for group in by_key.values():
            group.sort(key=lambda row: (row["ts"], row["id"]))
            for previous, current in zip(group, group[1:]):
                pair = pair_of_records(previous, current)
                if pair is not None:
                    key, disagreeing = pair
                    self.stats[key].add(disagreeing)
                    self.names[key] = f"{current['server']}.{current['tool']}"
        return self

    def table(self) -> list[NoiseRow]:
        rows = []
        for key, stats in self.stats.items():
            for path, count in sorted(stats.disagreements.items()):
                lower = wilson_lower_bound(count, stats.pairs, self.rule.z)
                rows.append(NoiseRow(self.names.get(key, key), path, count, stats.pairs, round(lower, 3), self.rule.is_noisy(count, stats.pairs)))
        return sorted(rows, key=lambda row: (row.tool, not row.noisy, row.path))
