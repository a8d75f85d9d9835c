"""A loaded learned model as the decision path uses it: per route, the derived
scorer and the threshold. No scikit-learn here (see persistence.py for loading)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from policies.learned.scorer import LinearScorer


@dataclass(frozen=True, slots=True)
class RouteModel:
    scorer: LinearScorer
    threshold: float  # P(acceptable) a call must clear to be sent to this route


@dataclass(frozen=True, slots=True)
class LearnedModel:
    routes: dict[str, RouteModel]  # "sim", "replay": only routes that were trained
    source: str = ""  # where it was loaded from
    digest: str = ""  # of the model file: which model made a decision
    card: dict[str, Any] = field(default_factory=dict)
