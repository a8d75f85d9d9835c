"""The policy contract: pure `decide(call, session) -> Decision | None`.

Policies run in order and the first answer wins. A policy does no I/O on the
decision path: whatever it needs was loaded when it was built.
"""

from __future__ import annotations

from calls import Call, Decision, RoutingPolicy, Session

# A routing policy (the protocol lives with the data model: an episode's session carries its own chain).
Policy = RoutingPolicy


def decide(policies: list[Policy], call: Call, session: Session, *, fallback: Decision) -> Decision:
    """Run `policies` in order; the first decision wins, else `fallback`."""
    for policy in policies:
        decision = policy.decide(call, session)
        if decision is not None:
            return decision
    return fallback
