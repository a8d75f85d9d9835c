"""What the learned router knows besides its model, held in memory and replaced
whole (one reference swap) when refreshed off the decision path: per-tool
statistics, the cold-start lower bounds, and the replay keys that have a real
recording."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from policies.learned.cold_start import lower_bound
from policies.learned.features import ToolStats
from policies.learned.labels import ROUTES, LabelBuilder


@dataclass(frozen=True, slots=True)
class LearnedState:
    stats: dict[str, ToolStats] = field(default_factory=dict)
    # (tool key, route) -> the Beta-Binomial lower bound of P(acceptable)
    priors: dict[tuple[str, str], float] = field(default_factory=dict)
    recorded_keys: frozenset[str] = frozenset()
    sim_latency_s: float = 1.0  # mean simulated answer time over all tools (a tool with none yet)
    labels: int = 0


EMPTY_STATE = LearnedState()


class StateBuilder:
    """Feeds records to a `LabelBuilder` as they come and makes state snapshots."""

    def __init__(self, *, max_divergence: float, confidence: float) -> None:
        self.labels = LabelBuilder(max_divergence=max_divergence)
        self.confidence = confidence
        self.count = 0
        self._bounds: dict[tuple[int, int], float] = {}

    def add(self, rows: Iterable[dict[str, Any]]) -> None:
        for row in rows:
            self.count += len(self.labels.add(row))

    def snapshot(self) -> LearnedState:
        priors: dict[tuple[str, str], float] = {}
        sim_time = sim_answers = 0.0
        stats = {key: _copy(s) for key, s in self.labels.stats.items()}
        for key, s in stats.items():
            sim_time += s.sim_latency
            sim_answers += s.sim_answers
            for route in ROUTES:
                n, ok = s.labels(route), s.successes(route)
                if (ok, n - ok) not in self._bounds:
                    self._bounds[(ok, n - ok)] = lower_bound(ok, n - ok, confidence=self.confidence)
                priors[(key, route)] = self._bounds[(ok, n - ok)]
        return LearnedState(stats, priors, frozenset(self.labels.recorded_keys), sim_time / sim_answers if sim_answers else 1.0, self.count)


def _copy(stats: ToolStats) -> ToolStats:
    from dataclasses import replace

    return replace(stats)
