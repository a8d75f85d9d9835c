"""The safety gate in the policy chain: it classifies every call first, hands the
verdict to the policies that use it (rules' `safety` key, rehearsal), and
attaches it to whatever decision the chain makes, so records, `_meta.simroute`
and the HTTP channel's `X-Simroute-Safety` header show it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, cast

from calls import Call, Decision, Session
from policies.base import Policy
from policies.safety.classifier import SafetyClassifier
from policies.safety.verdict import SafetyClass, SafetyVerdict


class SafetyAwarePolicy(Protocol):
    """A policy that reads the safety verdict (`wants_safety = True`): rules'
    `safety` key, rehearsal, the learned router."""

    name: str
    wants_safety: bool

    def decide(self, call: Call, session: Session, safety: SafetyVerdict | None = None) -> Decision | None: ...


class SafetyPolicy:
    name = "safety"

    def __init__(self, inner: Sequence[Policy], *, classifier: SafetyClassifier) -> None:
        self.inner = list(inner)
        self.classifier = classifier

    def verdict(self, call: Call, session: Session | None) -> SafetyVerdict:
        """The classifier's verdict; `unknown` (not analysed) when it raised, so that
        rehearsal fails closed and the record says why."""
        try:
            return self.classifier.classify(call, session)
        # Boundary: the safety classifier fails closed. A bug in it must not take
        # routing down; the call is recorded as unknown, not analysed.
        except Exception as exc:  # noqa: BLE001
            return SafetyVerdict(
                SafetyClass.UNKNOWN, f"classification failed: {type(exc).__name__}: {exc}", analysed=False
            )

    def decide(self, call: Call, session: Session) -> Decision | None:
        verdict = self.verdict(call, session)
        decision = decide_with(self.inner, call, session, verdict)
        if decision is None:
            return None
        # Built directly, not with dataclasses.replace (several times slower, on every call).
        return Decision(
            decision.route,
            decision.policy,
            decision.reason,
            safety=str(verdict.cls),
            safety_reason=verdict.reason,
            shadow_rate=decision.shadow_rate,
            deadline_s=decision.deadline_s,
            replay_as=decision.replay_as,
            perturbation=decision.perturbation,
        )


def decide_with(
    policies: Sequence[Policy], call: Call, session: Session, verdict: SafetyVerdict | None
) -> Decision | None:
    """Run `policies` in order, handing `verdict` to those that want it (`wants_safety`)."""
    for policy in policies:
        if getattr(policy, "wants_safety", False):
            decision = cast(SafetyAwarePolicy, policy).decide(call, session, verdict)
        else:
            decision = policy.decide(call, session)
        if decision is not None:
            return decision
    return None
