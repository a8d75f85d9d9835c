"""Seeded perturbation plans: pure decisions of which calls get a fault, a delay or a
cut answer. The engine claims the call numbers and applies the decision
(router/addons/perturbation/addon.py); nothing here does I/O."""

from policies.perturbation.config import DelayDistribution, PerturbationRuleConfig, PerturbationsConfig, PlanConfig
from policies.perturbation.plan import PerturbationRule, Plan, compile_plan
from policies.perturbation.session import PerturbationState

__all__ = [
    "DelayDistribution",
    "PerturbationRule",
    "PerturbationRuleConfig",
    "PerturbationState",
    "PerturbationsConfig",
    "Plan",
    "PlanConfig",
    "compile_plan",
]
