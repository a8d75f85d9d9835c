"""The learned router: per call, the cheapest route (real, sim, replay) whose
answer is likely faithful, learned from the router's own shadow records.

labels.py (labels from records), features.py (hashed features known before a
call), estimator.py + training.py (scikit-learn, `simroute train` only),
scorer.py (the decision path's scorer derived from the fitted model),
cold_start.py (per-tool Beta-Binomial), curve.py (share vs fidelity),
persistence.py (skops + model card), state.py (in-memory statistics),
policy.py (`LearnedPolicy`). Importing this package loads no scikit-learn.
"""

from policies.learned.model import LearnedModel, RouteModel
from policies.learned.policy import POLICY, LearnedPolicy, LearnedSettings, after_call
from policies.learned.state import EMPTY_STATE, LearnedState, StateBuilder

__all__ = [
    "EMPTY_STATE",
    "POLICY",
    "LearnedModel",
    "LearnedPolicy",
    "LearnedSettings",
    "LearnedState",
    "RouteModel",
    "StateBuilder",
    "after_call",
]
