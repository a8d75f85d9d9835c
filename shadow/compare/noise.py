"""The noise model: which paths of a tool's answers differ between two real calls.

Diffy's idea, without extra traffic: real-vs-real pairs of the same call key
(two real calls with the same arguments) show which paths change on their own.
A path is noisy for a tool when the pairs disagree there often enough: the
Wilson lower bound of the disagreement rate over at least `min_pairs` pairs
reaches `min_rate` (`NoiseRule`, with the counts the stores keep:
records/store/noise_counts.py). A comparison then masks those paths (see `Noise`), beside
the built-in detectors that apply from the first call.

A pair is evidence of noise only when nothing the router saw could have
changed what the call reads: which pairs qualify is the learner's business
(`shadow.noise_learner`: read-only calls, no side effect on the server in
between); a counter counting up between them is state, never noise
(`is_counter_step`).

The learning is pure (`NoiseModel`); where the counts live is a `NoiseStore`
(in memory here; the record stores implement the same protocol).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from calls import Observation
from records.store.noise_counts import NoiseRule, NoiseStats, merged_noise, wilson_lower_bound
from shadow.compare.difference import Difference
from shadow.compare.divergence import NO_NOISE, Noise, compare


class NoiseStore(Protocol):
    """Where the noise counts live (the record store implements it)."""

    async def noise_stats(self, tool_key: str) -> NoiseStats: ...

    async def writes_between(self, channel: str, server: str, *, since: float, until: float) -> bool:
        """Whether any router's call that may have written to the server spans a moment from
        `since` to `until` (see `RecordStore.writes_between`)."""
        ...

    async def add_noise_observation(self, tool_key: str, disagreeing: Iterable[str], *, name: str = "") -> None:
        """Count one more real-vs-real pair of `tool_key` ("server.tool" `name`), disagreeing at `disagreeing`."""
        ...


class MemoryNoiseStore:
    def __init__(self) -> None:
        self.stats: dict[str, NoiseStats] = defaultdict(NoiseStats)
        # (channel, server, start, end) of the calls that may have written: what other routers' records would say.
        self.writes: list[tuple[str, str, float, float]] = []

    async def writes_between(self, channel: str, server: str, *, since: float, until: float) -> bool:
        return any((c, s) == (channel, server) and start <= until and end >= since for c, s, start, end in self.writes)

    async def noise_stats(self, tool_key: str) -> NoiseStats:
        return self.stats[tool_key]

    async def add_noise_observation(self, tool_key: str, disagreeing: Iterable[str], *, name: str = "") -> None:
        self.stats[tool_key].add(disagreeing)


def pair_disagreements(first: Observation, second: Observation, *, channel: str) -> set[str]:
    """Where two real answers to the same call disagree, as noise-model paths, leaving
    out counter steps (`is_counter_step`): a value that counts calls is state the world
    model is expected to carry forward from the session's history, not noise."""
    return {
        d.noise_key
        for d in compare(first, second, channel=channel, noise=NO_NOISE).differences
        if not is_counter_step(d)
    }


# How far a counter may move between two answers to the same call: one step, or a
# couple more when other callers read it in between.
COUNTER_STEPS = range(1, 4)
_INTEGER = re.compile(r"-?\d+")


def is_counter_step(difference: Difference) -> bool:
    """Whether `difference` (the earlier answer as `real`, the later as `sim`) is an
    integer counting up by a small step (`42` -> `43`, "visit number 1" -> "visit
    number 2"): the later value is the earlier one plus 1 to 3, everything around
    it equal. Values of a noisy shape (timestamps, durations) are never counters."""
    if difference.detector is not None:
        return False
    earlier, later = difference.real, difference.sim
    if (
        isinstance(earlier, int)
        and isinstance(later, int)
        and not isinstance(earlier, bool)
        and not isinstance(later, bool)
    ):
        return later - earlier in COUNTER_STEPS
    if not (isinstance(earlier, str) and isinstance(later, str)):
        return False
    earlier_numbers, later_numbers = _INTEGER.findall(earlier), _INTEGER.findall(later)
    if len(earlier_numbers) != len(later_numbers) or _INTEGER.sub("#", earlier) != _INTEGER.sub("#", later):
        return False
    moved = [(int(a), int(b)) for a, b in zip(earlier_numbers, later_numbers, strict=True) if a != b]
    return len(moved) == 1 and moved[0][1] - moved[0][0] in COUNTER_STEPS


async def noise_for_tool(
    store: NoiseStore | None, tool_key: str, *, rule: NoiseRule = NoiseRule(), scopes: Sequence[str] = ("",)
) -> Noise:
    """The noise mask of one tool, from the store's counts (built-in detectors only
    without a store). With tokens, the counts are kept per token namespace (the
    learner prefixes the tool key): `scopes` are the prefixes a session may use (its
    own and the shared namespaces'), their counts added up."""
    if store is None:
        return Noise(builtin=rule.builtin_detectors, paths=frozenset())
    stats = merged_noise([await store.noise_stats(scope + tool_key) for scope in scopes])
    return Noise(builtin=rule.builtin_detectors, paths=stats.noisy(rule))


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

    def table(self) -> list[NoiseRow]:
        rows = []
        for key, stats in self.stats.items():
            for path, count in sorted(stats.disagreements.items()):
                lower = wilson_lower_bound(count, stats.pairs, self.rule.z)
                rows.append(
                    NoiseRow(
                        self.names.get(key, key),
                        path,
                        count,
                        stats.pairs,
                        round(lower, 3),
                        self.rule.is_noisy(count, stats.pairs),
                    )
                )
        return sorted(rows, key=lambda row: (row.tool, not row.noisy, row.path))
