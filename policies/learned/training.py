"""`simroute train`'s work: labels in, one calibrated classifier per route out,
with cross-validated metrics, the share-vs-fidelity curve and the threshold for
the target fidelity.

A route whose labels are all one class (or too few to cross-validate) gets no
classifier: the evidence rule and the per-tool estimates decide it (prior.py),
and the report says so. The thresholds found here on labels are a starting
point only: `simroute train` sets the saved thresholds by deciding the stored
sessions again with the live procedure (router/reports/train_curve.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from policies.learned.curve import CurvePoint, curve, pick_threshold, summary
from policies.learned.estimator import RouteClassifier
from policies.learned.features import N_BITS, call_features
from policies.learned.labels import ROUTES, Label

MIN_PER_CLASS = 4  # labels of each class a route needs for a classifier


@dataclass(frozen=True, slots=True)
class TrainingSettings:
    target_fidelity: float = 0.9
    n_bits: int = N_BITS
    C: float = 1.0
    cv_folds: int = 5
    sim_price: float = 0.1
    latency_weight: float = 0.1
    real_price: Callable[[str, str], float] = lambda server, tool: 1.0
    seed: int = 0


@dataclass(slots=True)
class RouteReport:
    route: str
    labels: int
    acceptable: int
    trained: bool = False
    why_not: str = ""
    auc: float | None = None
    brier: float | None = None
    # Per bin: mean predicted, share acceptable, count.
    calibration: list[dict[str, float]] = field(default_factory=list)
    curve: list[CurvePoint] = field(default_factory=list)
    chosen: CurvePoint | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"labels": self.labels, "acceptable": self.acceptable, "trained": self.trained}
        if not self.trained:
            out["uses"] = "the evidence rule and the per-tool estimates"
            out["why"] = self.why_not
            return out
        out.update(
            cv_roc_auc=round(self.auc, 4) if self.auc is not None else None,
            cv_brier=round(self.brier, 4) if self.brier is not None else None,
            calibration=self.calibration,
        )
        return out


@dataclass(slots=True)
class TrainingResult:
    classifiers: dict[str, RouteClassifier]
    thresholds: dict[str, float]
    reports: dict[str, RouteReport]


def route_labels(labels: Sequence[Label], route: str) -> list[Label]:
    return [label for label in labels if label.route == route]


def features_of(labels: Sequence[Label]) -> list[list[tuple[str, float]]]:
    return [call_features(label.facts) for label in labels]


def savings_of(labels: Sequence[Label], settings: TrainingSettings) -> list[float]:
    """Per label, what sending the call to its route instead of real saves."""
    out = []
    for label in labels:
        facts = label.facts
        real_latency = (facts.stats.mean_latency("real") if facts.stats else None) or 0.0
        route_price = settings.sim_price if label.route == "sim" else 0.0
        real = settings.real_price(facts.server, facts.tool) + settings.latency_weight * real_latency
        out.append(real - (route_price + settings.latency_weight * label.latency_s))
    return out


def steps_for(labels: Sequence[Label], settings: TrainingSettings) -> int:
    """How many progress steps `train` takes (for a progress bar)."""
    return sum(settings.cv_folds + 1 for route in ROUTES if route_labels(labels, route))


def train(
    labels: Sequence[Label], settings: TrainingSettings, *, advance: Callable[[str], None] = lambda what: None
) -> TrainingResult:
    result = TrainingResult({}, {}, {})
    for route in ROUTES:
        chosen = route_labels(labels, route)
        y = np.array([int(label.acceptable) for label in chosen], dtype=np.int64)
        report = RouteReport(route, len(chosen), int(y.sum()))
        result.reports[route] = report
        smaller = int(min(y.sum(), len(y) - y.sum())) if len(y) else 0
        if smaller < MIN_PER_CLASS:
            report.why_not = (
                f"all {len(y)} labels are {'acceptable' if y.sum() else 'unacceptable'}"
                if len(y) and smaller == 0
                else f"{len(y)} labels, {smaller} of the rarer class (a classifier needs {MIN_PER_CLASS} of each)"
            )
            for _ in range(settings.cv_folds + 1 if chosen else 0):
                advance(f"{route}: skipped")
            continue
        X = features_of(chosen)
        probabilities = cross_validated(X, y, settings, advance=_prefixed(advance, route))
        _metrics(report, y, probabilities)
        divergences = [label.divergence for label in chosen]
        report.curve = curve(probabilities.tolist(), divergences, savings=savings_of(chosen, settings))
        report.chosen = pick_threshold(report.curve, settings.target_fidelity)
        report.curve = summary(report.curve)
        classifier = RouteClassifier(n_bits=settings.n_bits, C=settings.C).fit(X, y)
        advance(f"{route}: final fit")
        report.trained = True
        result.classifiers[route] = classifier
        result.thresholds[route] = report.chosen.threshold
    return result


def _prefixed(advance: Callable[[str], None], route: str) -> Callable[[str], None]:
    """`advance` with each step named after the route being trained."""
    return lambda what: advance(f"{route}: {what}")


def cross_validated(
    X: list, y: np.ndarray, settings: TrainingSettings, *, advance: Callable[[str], None]
) -> np.ndarray:
    """Out-of-fold P(acceptable) of every call (stratified folds)."""
    from sklearn.model_selection import StratifiedKFold

    folds = min(settings.cv_folds, int(min(y.sum(), len(y) - y.sum())))
    out = np.zeros(len(y))
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=settings.seed)
    for n, (train_idx, test_idx) in enumerate(splitter.split(np.zeros(len(y)), y)):
        model = RouteClassifier(n_bits=settings.n_bits, C=settings.C).fit([X[i] for i in train_idx], y[train_idx])
        out[test_idx] = model.predict_proba([X[i] for i in test_idx])[:, 1]
        advance(f"fold {n + 1}/{folds}")
    for _ in range(settings.cv_folds - folds):
        advance("")
    return out


def _metrics(report: RouteReport, y: np.ndarray, probabilities: np.ndarray) -> None:
    from sklearn.metrics import brier_score_loss, roc_auc_score

    report.auc = float(roc_auc_score(y, probabilities))
    report.brier = float(brier_score_loss(y, probabilities))
    bins = np.minimum((probabilities * 5).astype(int), 4)
    report.calibration = [
        {
            "predicted": round(float(probabilities[bins == b].mean()), 3),
            "acceptable": round(float(y[bins == b].mean()), 3),
            "count": int((bins == b).sum()),
        }
        for b in range(5)
        if (bins == b).any()
    ]
