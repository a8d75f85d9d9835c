"""Pure routing decisions: `decide(call, session) -> Decision | None`."""

from __future__ import annotations

from policies.base import Policy, decide
from policies.mode import ModePolicy
from policies.rules import Rule, RulesPolicy, parse_rule
from router.types import Route


def default_policies(*, rules: list[Rule], mode: Route) -> list[Policy]:
    """The policy chain, in the order it runs: explicit rules, then the default mode."""
    return [RulesPolicy(rules), ModePolicy(mode)]


__all__ = ["Policy", "ModePolicy", "Rule", "RulesPolicy", "decide", "default_policies", "parse_rule"]
