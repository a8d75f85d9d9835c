"""The noise table as the record stores keep it: per tool, how many real-vs-real
pairs were seen and at which paths they disagreed (`NoiseStats`), the counts of
several namespaces added up (`merged_noise`), and the rule that reads a path as
noisy from them (`NoiseRule`: the Wilson lower bound of its disagreement rate).
Learning the counts and masking a comparison with them is shadow/compare/noise.py.
Pure; imports nothing of the project.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


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


def merged_noise(parts: Sequence[NoiseStats]) -> NoiseStats:
    """The counts of several namespaces of one tool, added up."""
    if len(parts) == 1:
        return parts[0]
    total = NoiseStats()
    for part in parts:
        total.pairs += part.pairs
        for path, count in part.disagreements.items():
            total.disagreements[path] = total.disagreements.get(path, 0) + count
    return total
