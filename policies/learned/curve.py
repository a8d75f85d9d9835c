"""The RouteLLM-style curve: share of calls sent to a cheaper route vs fidelity kept.

For a threshold `t`, the calls whose P(acceptable) clears it go to the route
(sim or replay) and the rest stay real. Fidelity kept is 1 - the mean divergence
of what the agent would have seen over all the calls, calls left real counting
as faithful (divergence 0). The threshold for a target fidelity is the lowest
one (the most calls sent) such that every higher threshold keeps the target too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

NEVER = 1.01  # a threshold no probability clears: the route is never taken


@dataclass(frozen=True, slots=True)
class CurvePoint:
    threshold: float
    share: float  # of calls sent to the route
    fidelity: float  # 1 - mean divergence seen, real calls counting 0
    real_calls_saved: int
    cost_saved: float  # sum over the calls sent of (real price - route price)

    def to_json(self) -> dict[str, float]:
        return {
            "threshold": round(self.threshold, 4),
            "share": round(self.share, 4),
            "fidelity": round(self.fidelity, 4),
            "real_calls_saved": self.real_calls_saved,
            "cost_saved": round(self.cost_saved, 4),
        }


def curve(
    probabilities: Sequence[float], divergences: Sequence[float], *, savings: Sequence[float] | None = None
) -> list[CurvePoint]:
    """One point per distinct probability (as threshold), highest threshold first,
    starting with NEVER (nothing sent). `savings`: per call, what sending it saves."""
    n = len(probabilities)
    if n == 0:
        return [CurvePoint(NEVER, 0.0, 1.0, 0, 0.0)]
    saved = savings if savings is not None else [0.0] * n
    order = sorted(range(n), key=lambda i: -probabilities[i])
    points = [CurvePoint(NEVER, 0.0, 1.0, 0, 0.0)]
    divergence_sum = cost = 0.0
    i = 0
    while i < n:
        threshold = probabilities[order[i]]
        while i < n and probabilities[order[i]] == threshold:
            divergence_sum += divergences[order[i]]
            cost += saved[order[i]]
            i += 1
        points.append(CurvePoint(threshold, i / n, 1.0 - divergence_sum / n, i, cost))
    return points


def pick_threshold(points: Sequence[CurvePoint], target_fidelity: float) -> CurvePoint:
    """The point with the lowest threshold whose fidelity, and that of every higher
    threshold, is at least `target_fidelity` (NEVER when even the first call misses)."""
    chosen = points[0]
    for point in points[1:]:
        if point.fidelity < target_fidelity:
            break
        chosen = point
    return chosen


def fidelity_at(threshold: float, probabilities: Sequence[float], divergences: Sequence[float]) -> tuple[float, float]:
    """(share sent, fidelity kept) of applying `threshold` to calls."""
    n = len(probabilities)
    if n == 0:
        return 0.0, 1.0
    sent = [d for p, d in zip(probabilities, divergences, strict=True) if p >= threshold]
    return len(sent) / n, 1.0 - sum(sent) / n


def summary(points: Sequence[CurvePoint], *, steps: int = 10) -> list[CurvePoint]:
    """About `steps` points spread over the share axis (for printing and the card)."""
    if len(points) <= steps + 1:
        return list(points)
    out, next_share = [points[0]], 1.0 / steps
    for point in points[1:]:
        if point.share >= next_share - 1e-12:
            out.append(point)
            next_share = point.share + 1.0 / steps
    if out[-1] is not points[-1]:
        out.append(points[-1])
    return out
