"""A judge run's report: per kind of pair (simulated, control) the mean of each
dimension (1–5) and the overall score on AgentWorldBench's 0–100 scale; the same per
tool; the judge's failure rate; and its rank agreement with simroute's rule-based
divergence (Spearman over the simulated pairs that have one: a judge that agrees
scores the pairs that diverged more lower, so the agreement is the correlation of
the score with minus the divergence)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from records.judge.pairs import CONTROL, KINDS, SIMULATED
from records.judge.prompt import DIMENSIONS, PROMPT_VERSION, to_100
from records.judge.run import Judged, JudgeRun


def summary(judged: Iterable[Judged]) -> dict[str, Any]:
    """Counts and means of a group of outcomes (one kind of pair)."""
    outcomes = list(judged)
    verdicts = [done.verdict for done in outcomes if done.verdict is not None]
    means = {name: _mean(v.scores[name] for v in verdicts) for name in DIMENSIONS}
    overall = _mean(v.mean for v in verdicts)
    return {
        "pairs": len(outcomes),
        "scored": len(verdicts),
        "failed": len(outcomes) - len(verdicts),
        "retried": sum(1 for done in outcomes if done.attempts > 1),
        "dimensions": means,
        "mean": overall,
        "score_100": _round(to_100(overall)) if overall is not None else None,
    }


def agreement(judged: Iterable[Judged]) -> dict[str, Any]:
    """Spearman's rank correlation of the judge's score with minus the stored
    divergence, over the simulated pairs that have both (None: too few, or one side constant)."""
    points = [
        (done.verdict.mean, done.pair.record.divergence)
        for done in judged
        if done.pair.kind == SIMULATED and done.verdict is not None and done.pair.record.divergence is not None
    ]
    out: dict[str, Any] = {"spearman": None, "p_value": None, "pairs": len(points)}
    if len(points) < 3 or len({s for s, _ in points}) < 2 or len({d for _, d in points}) < 2:
        return out
    from scipy.stats import spearmanr

    result = spearmanr([s for s, _ in points], [-d for _, d in points])
    rho, p = float(result.statistic), float(result.pvalue)
    if math.isfinite(rho):
        out["spearman"], out["p_value"] = _round(rho), (_round(p) if math.isfinite(p) else None)
    return out


def report(run: JudgeRun, *, judge: str, endpoint: str) -> dict[str, Any]:
    by_kind = {kind: summary(done for done in run.judged if done.pair.kind == kind) for kind in KINDS}
    attempted = len(run.judged)
    failed = sum(part["failed"] for part in by_kind.values())
    tools: dict[tuple[str, str, str], list[Judged]] = defaultdict(list)
    for done in run.judged:
        call = done.pair.call
        tools[call.channel, call.server, call.tool].append(done)
    return {
        "judge": {"model": judge, "endpoint": endpoint, "prompt_version": PROMPT_VERSION},
        "records_read": run.records,
        "simulated": by_kind[SIMULATED],
        "control": by_kind[CONTROL],
        "failure_rate": _round(failed / attempted) if attempted else None,
        "failures": [
            {"record": done.pair.record.id, "kind": done.pair.kind, "reason": done.failure}
            for done in run.judged
            if done.failure
        ][:20],
        "agreement": agreement(run.judged),
        "by_tool": [
            {
                "channel": channel,
                "server": server,
                "tool": tool,
                **{kind: _brief(summary(done for done in group if done.pair.kind == kind)) for kind in KINDS},
            }
            for (channel, server, tool), group in sorted(tools.items())
        ],
        "stored": run.stored,
    }


def _brief(part: dict[str, Any]) -> dict[str, Any]:
    return {"scored": part["scored"], "failed": part["failed"], "score_100": part["score_100"]}


def _mean(values: Iterable[float]) -> float | None:
    items = list(values)
    return _round(sum(items) / len(items)) if items else None


def _round(value: float) -> float:
    return round(value, 4)
