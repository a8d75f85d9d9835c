"""The policy chain every router builds: `default_policies()` lists the policies in
the order they run (explicit lists, no registration)."""

from __future__ import annotations

from collections.abc import Sequence

from calls import Mode, Route
from policies.base import Policy
from policies.errors import PolicyConfigError
from policies.mode import ModePolicy
from policies.rehearsal import RehearsalGate
from policies.rules import Rule, RulesPolicy
from policies.safety import SafetyClassifier
from policies.safety.policy import SafetyPolicy
from policies.sticky import StickyPolicy
from policies.tunnels import TunnelPolicy


def default_policies(
    *,
    rules: list[Rule],
    mode: Route | Mode,
    classifier: SafetyClassifier | None = None,
    rehearsal: RehearsalGate | None = None,
    learned: Policy | None = None,
    holds: Sequence[Policy] = (),
) -> list[Policy]:
    """The policy chain, in the order it runs: the safety gate classifies every call
    (its verdict goes with whatever decision follows); in rehearsal, the gate's
    allow rules and diversions; explicit rules; the refusal of raw TCP tunnels no rule
    opened; then the default mode (or, for `mode: learned`, the learned router), whose
    choice a stateful channel (shell, browser) keeps for the session. `learned` also
    answers rules with `route: learned`. `holds` run before all of these but the safety
    gate: what they hold (a tool whose definition changed unaccepted) no rule releases."""
    mode = Mode(mode)
    last: Policy
    if mode.route is not None:
        last = ModePolicy(mode.route)
    elif learned is not None:
        last = learned
    else:
        raise PolicyConfigError("mode learned needs the learned router")
    inner: list[Policy] = [RulesPolicy(rules, learned=learned), TunnelPolicy(), StickyPolicy([last])]
    if rehearsal is not None:
        inner.insert(0, rehearsal)
    inner[:0] = holds
    if classifier is None and rehearsal is None and learned is None:
        return inner
    return [SafetyPolicy(inner, classifier=classifier or SafetyClassifier())]
