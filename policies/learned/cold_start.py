"""Cold start: a per-tool Beta-Binomial estimate of P(acceptable) per route.

With `s` acceptable and `f` unacceptable labels, the posterior under a uniform
prior is Beta(1 + s, 1 + f); the router uses its lower confidence bound (the
`1 - confidence` quantile), so a tool goes to a cheaper route only once its
record is both good and long enough: 15 acceptable labels out of 15 clear 0.9
at 80% confidence, 5 out of 5 do not. Computed off the decision path (scipy),
when the statistics are refreshed.
"""

from __future__ import annotations


def lower_bound(successes: int, failures: int, *, confidence: float) -> float:
    """The `confidence` lower bound of P(acceptable) from Beta(1 + successes, 1 + failures)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    from scipy.special import betaincinv

    return float(betaincinv(1.0 + successes, 1.0 + failures, 1.0 - confidence))
