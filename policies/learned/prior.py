"""Few-label estimates of P(acceptable) per tool and route: an empirical-Bayes prior.

A tool with `s` acceptable and `f` unacceptable labels for a route is estimated
at the posterior mean of Beta(a + s, b + f). The prior (a, b) is fitted per
kind of tool (channel and route) from the acceptance rates of the tools of that
kind, by the method of moments, on top of a uniform Beta(1, 1): tools that agree
with each other lend a little strength, tools that differ lend none. Its weight
is capped at `strength` pseudo-labels, so one tool cannot lend trust it has not
earned: with the default 4, a tool needs about nine acceptable labels in a row to
clear a 0.9 target on its own record, and a well-behaved kind saves it a few.
A tool with no label at all is never estimated above 0 (it stays real).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BetaPrior:
    a: float = 1.0
    b: float = 1.0

    def mean(self, successes: int, failures: int) -> float:
        if successes + failures == 0:
            return 0.0
        return (self.a + successes) / (self.a + self.b + successes + failures)


def fit_prior(counts: Iterable[tuple[int, int]], *, strength: float) -> BetaPrior:
    """The prior for tools of one kind, from each tool's (successes, failures)."""
    rates = [s / (s + f) for s, f in counts if s + f]
    if len(rates) < 2 or strength <= 0:
        return BetaPrior()
    mean = sum(rates) / len(rates)
    variance = sum((r - mean) ** 2 for r in rates) / (len(rates) - 1)
    spread = mean * (1.0 - mean)
    # Method of moments: a Beta with this mean and variance has a + b = spread / variance - 1.
    weight = strength if variance <= 1e-12 else min(strength, max(0.0, spread / variance - 1.0))
    return BetaPrior(1.0 + weight * mean, 1.0 + weight * (1.0 - mean))
