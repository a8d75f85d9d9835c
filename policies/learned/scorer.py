"""The decision path's scorer, derived from a fitted `RouteClassifier`.

The fitted model is a logistic regression's linear score `f = w.x + b0` and a
sigmoid calibration `P = 1 / (1 + exp(a*f + b))`. Both are extracted once, at
load time, into plain Python numbers: the nonzero weights by hashed column, the
intercept, `a` and `b`. Scoring a call is then a few dictionary lookups and one
`exp` (no numpy, no scikit-learn), and agrees with `predict_proba` to float
rounding (tests/unit/policies/learned/test_learned_training.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from policies.learned.features import Feature, feature_index


@dataclass(frozen=True, slots=True)
class LinearScorer:
    weights: dict[int, float]  # hashed column -> weight (nonzero only)
    intercept: float
    a: float  # sigmoid calibration: P = 1 / (1 + exp(a * score + b))
    b: float
    n_bits: int

    @classmethod
    def from_classifier(cls, classifier) -> LinearScorer:
        """Extract the scorer from a fitted `RouteClassifier` (its calibrated regression)."""
        [calibrated] = classifier.model_.calibrated_classifiers_
        regression = calibrated.estimator
        [calibrator] = calibrated.calibrators
        if list(regression.classes_) != [0, 1]:
            raise ValueError(f"expected classes [0, 1], got {list(regression.classes_)}")
        coef, columns = regression.coef_[0], classifier.columns_
        return cls(
            weights={int(columns[j]): float(coef[j]) for j in coef.nonzero()[0]},
            intercept=float(regression.intercept_[0]),
            a=float(calibrator.a_),
            b=float(calibrator.b_),
            n_bits=int(classifier.n_bits),
        )

    def score(self, features: Iterable[Feature]) -> float:
        """The regression's linear score of a call."""
        return self.intercept + self.partial(features)

    def partial(self, features: Iterable[Feature]) -> float:
        """The weighted sum of some of a call's features, without the intercept (the
        decision path adds the call's dynamic features to its cached static score)."""
        weights, n_bits = self.weights, self.n_bits
        total = 0.0
        for name, value in features:
            column, sign = feature_index(name, n_bits)
            weight = weights.get(column)
            if weight is not None:
                total += weight * sign * value
        return total

    def score_columns(self, columns: dict[int, float]) -> float:
        """The linear score of a call's hashed features (`features.hashed`, made once
        per call and shared by the routes' scorers)."""
        weights = self.weights
        total = self.intercept
        for column, value in columns.items():
            weight = weights.get(column)
            if weight is not None:
                total += weight * value
        return total

    def probability(self, features: Iterable[Feature]) -> float:
        """The calibrated P(acceptable)."""
        return self.calibrated(self.score(features))

    def probability_of_columns(self, columns: dict[int, float]) -> float:
        return self.calibrated(self.score_columns(columns))

    def calibrated(self, score: float) -> float:
        z = self.a * score + self.b
        if z >= 0:  # numerically stable either side
            e = math.exp(-z)
            return e / (1.0 + e)
        return 1.0 / (1.0 + math.exp(z))
