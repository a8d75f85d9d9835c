"""`simroute train`'s curve and thresholds, from the live decision procedure.

The trained classifiers are loaded as the router loads them, and the stored
sessions are decided again (router/reports/workload.py) once per candidate
threshold: replay's threshold first (sim kept off), then sim's with replay's
chosen. For each: the share of calls served off the real side and the fidelity
the agent would have kept, over calls, with every live gate in place. A route's
threshold is the lowest whose fidelity, and that of every higher threshold,
reaches `learned.target_fidelity`. The last run, at the chosen thresholds, is
the report's promise: what the router would deliver, and why the other calls
stay real.

The classifiers are scored on the sessions they were trained on, so their part
of the promise is an in-sample figure; the gates, the evidence rule and the
few-label estimates are decided from what was known at each session's start.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from calls import Mode
from policies.learned import LearnedModel, RouteModel
from policies.learned.curve import NEVER
from policies.learned.scorer import LinearScorer
from router.config import Config
from router.engine.tool_catalog import ToolCatalog
from router.reports.learned_eval import decide_again
from router.reports.learned_policy import replay_key_function
from router.reports.workload import ExplainedPolicy, RecordedCall, WorkloadReport, recorded_workload
from router.runtime.policy_chain import learned_settings, learned_tenancy

GRID = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.925, 0.95, 0.975, 0.99)


@dataclass(frozen=True, slots=True)
class WorkloadPoint:
    threshold: float
    off_real_share: float
    fidelity: float
    wrong: int
    cost_saved: float

    def to_json(self) -> dict[str, float]:
        return {
            "threshold": self.threshold,
            "off_real_share": round(self.off_real_share, 4),
            "fidelity": round(self.fidelity, 4),
            "wrong": self.wrong,
            "cost_saved": round(self.cost_saved, 4),
        }


@dataclass(slots=True)
class TrainCurve:
    thresholds: dict[str, float]
    curves: dict[str, list[WorkloadPoint]] = field(default_factory=dict)
    promise: WorkloadReport | None = None


def workload_curve(
    cfg: Config, rows: Sequence[dict[str, Any]], classifiers: dict[str, Any], *, catalog: ToolCatalog | None = None
) -> TrainCurve:
    if not cfg.uses_learned():
        # The curve is of the learned router, whatever the config's mode.
        cfg = cfg.model_copy(update={"mode": Mode.LEARNED})
    section = cfg.learned
    calls = recorded_workload(
        rows, max_divergence=section.max_divergence, prior_strength=section.prior_strength, tenancy=learned_tenancy(cfg)
    )
    scorers = {route: LinearScorer.from_classifier(classifier) for route, classifier in classifiers.items()}
    thresholds = {route: NEVER for route in scorers}
    result = TrainCurve(thresholds)
    for route in ("replay", "sim"):
        if route not in scorers:
            continue
        points = []
        for threshold in (NEVER, *sorted(GRID, reverse=True)):
            report = _run(cfg, calls, scorers, {**thresholds, route: threshold}, catalog)
            points.append(
                WorkloadPoint(threshold, report.off_real_share, report.fidelity, report.wrong, report.cost_saved)
            )
        chosen = points[0]
        for point in points[1:]:
            if point.fidelity < section.target_fidelity:
                break
            chosen = point
        thresholds[route] = chosen.threshold
        result.curves[route] = points
    result.promise = _run(cfg, calls, scorers, thresholds, catalog)
    return result


def _run(
    cfg: Config,
    calls: Sequence[RecordedCall],
    scorers: dict[str, LinearScorer],
    thresholds: dict[str, float],
    catalog: ToolCatalog | None,
) -> WorkloadReport:
    model = (
        LearnedModel(
            {route: RouteModel(scorer, thresholds[route]) for route, scorer in scorers.items()}, digest="candidate"
        )
        if scorers
        else None
    )
    learned = ExplainedPolicy(learned_settings(cfg), replay_key_of=replay_key_function(cfg), model=model)
    return decide_again(cfg, calls, learned, catalog)
