"""The policy contract: pure `decide(call, session) -> Decision | None`.

Policies run in order and the first answer wins. A policy does no I/O on the
decision path: whatever it needs was loaded when it was built.
"""

from __future__ import annotations

from typing import Protocol

from router.types import Call, Decision, Session


class Policy(Protocol):
    name: str

    def decide(self, call: Call, session: Session) -> Decision | None: ...


def decide(policies: list[Policy], call: Call, session: Session, *, fallback: Decision) -> Decision:
    """Run `policies` in order; the first decision wins, else `fallback`."""
    for policy in policies:
        decision = policy.decide(call, session)
        if decision is not None:
            return decision
    return fallback
