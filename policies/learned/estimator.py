"""`RouteClassifier`: P(a route's answer is acceptable | the call's features).

A scikit-learn estimator (`__init__` stores parameters, `fit` validates and sets
the `trailing_underscore_` attributes and returns `self`): the hashed features
of `policies/learned/features.py` -> logistic regression -> sigmoid (Platt)
calibration fitted on cross-validated predictions (`ensemble=False`: one
regression fitted on all the data, one calibrator), so the fitted model is a
linear score and one sigmoid, which `policies/learned/scorer.py` extracts for
the decision path. scikit-learn is imported here only: training and loading,
never deciding.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.linear_model import LogisticRegression

from policies.learned.features import N_BITS, Feature, hashed


def hash_matrix(rows: Sequence[Sequence[Feature]], n_bits: int = N_BITS) -> sparse.csr_matrix:
    """The hashed features of many calls as one sparse matrix."""
    indptr: list[int] = [0]
    indices: list[int] = []
    values: list[float] = []
    for features in rows:
        columns = hashed(features, n_bits)
        indices.extend(columns.keys())
        values.extend(columns.values())
        indptr.append(len(indices))
    return sparse.csr_matrix(
        (np.asarray(values, dtype=np.float64), np.asarray(indices, dtype=np.int64), np.asarray(indptr)),
        shape=(len(rows), 1 << n_bits),
    )


class RouteClassifier(ClassifierMixin, BaseEstimator):
    """Fits on lists of named features (`X`) and 0/1 labels (`y`, 1: acceptable)."""

    def __init__(
        self, *, n_bits: int = N_BITS, C: float = 1.0, calibration_folds: int = 3, max_iter: int = 1000
    ) -> None:
        self.n_bits = n_bits
        self.C = C
        self.calibration_folds = calibration_folds
        self.max_iter = max_iter

    def fit(self, X: Sequence[Sequence[Feature]], y: Sequence[int] | np.ndarray) -> RouteClassifier:
        labels = np.asarray(y, dtype=np.int64)
        if len(X) != len(labels):
            raise ValueError(f"X has {len(X)} calls but y has {len(labels)} labels")
        classes, counts = np.unique(labels, return_counts=True)
        if not set(classes.tolist()) <= {0, 1} or len(classes) != 2:
            raise ValueError(f"y must hold both 0 and 1, got classes {classes.tolist()}")
        folds = min(self.calibration_folds, int(counts.min()))
        if folds < 2:
            raise ValueError(
                f"each class needs at least 2 labels (got {dict(zip(classes.tolist(), counts.tolist(), strict=True))})"
            )
        matrix = hash_matrix(X, self.n_bits)
        # Fitted on the columns the calls use: the same solution (an unused column's
        # L2-penalised weight is 0) at a fraction of the cost of 2**n_bits columns.
        self.columns_ = np.unique(matrix.indices)
        regression = LogisticRegression(C=self.C, max_iter=self.max_iter)
        self.model_ = CalibratedClassifierCV(regression, method="sigmoid", cv=folds, ensemble=False).fit(
            matrix[:, self.columns_], labels
        )
        self.classes_ = self.model_.classes_
        self.n_labels_ = int(len(labels))
        return self

    def predict_proba(self, X: Sequence[Sequence[Feature]]) -> np.ndarray:
        return self.model_.predict_proba(hash_matrix(X, self.n_bits)[:, self.columns_])

    def predict(self, X: Sequence[Sequence[Feature]]) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
