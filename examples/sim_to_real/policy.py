"""The policy: a Bernoulli bandit over the strategies (Thompson sampling, Beta(1, 1)
priors), seeded. Untrained, it picks uniformly; trained, `best()` is the strategy with
the highest posterior mean success."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Bandit:
    arms: list[str]
    seed: int = 0
    wins: dict[str, int] = field(default_factory=dict)
    losses: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        for arm in self.arms:
            self.wins.setdefault(arm, 0)
            self.losses.setdefault(arm, 0)

    def sample(self) -> str:
        """An arm drawn by Thompson sampling (uniform while nothing is learnt)."""
        draws = {arm: self.rng.betavariate(self.wins[arm] + 1, self.losses[arm] + 1) for arm in self.arms}
        return max(self.arms, key=draws.__getitem__)

    def learn(self, arm: str, success: bool) -> None:
        if success:
            self.wins[arm] += 1
        else:
            self.losses[arm] += 1

    def mean(self, arm: str) -> float:
        return (self.wins[arm] + 1) / (self.wins[arm] + self.losses[arm] + 2)

    def best(self) -> str:
        return max(self.arms, key=self.mean)

    @property
    def episodes(self) -> int:
        return sum(self.wins.values()) + sum(self.losses.values())
