"""Pure routing decisions: `decide(call, session) -> Decision | None`."""

from __future__ import annotations

from policies.base import Policy, decide
from policies.mode import ModePolicy
from policies.rules import Rule, RulesPolicy, parse_rule
from policies.sticky import StickyPolicy
from router.types import Route


def default_policies(*, rules: list[Rule], mode: Route) -> list[Policy]:
    """The policy chain, in the order it runs: explicit rules, then the default mode,
    whose choice a stateful channel (shell, browser) keeps for the session."""
    return [RulesPolicy(rules), StickyPolicy([ModePolicy(mode)])]


__all__ = ["Policy", "ModePolicy", "Rule", "RulesPolicy", "StickyPolicy", "decide", "default_policies", "parse_rule"]
