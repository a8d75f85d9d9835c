"""Rehearsal: whatever would change the real world is simulated (or denied).

`RehearsalGate` runs after the safety classifier, before the ordinary rules:
- a (channel, server) of the session already diverted stays simulated, so its
  later reads see the world the agent changed;
- `rehearsal.allow` rules answer next (e.g. `rm -rf build/` may run for real);
- a call whose class is diverted on its channel goes to `on_divert` (sim or deny).
  A call the classifier could not classify (it raised) or could not fully analyse
  (a shell line that did not parse) is diverted too: rehearsal fails closed.

`after_call` is the engine's hook once a call completed: a diversion re-pins the
session's (channel, server) to sim.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from policies.errors import PolicyConfigError
from policies.marks import Diversions, RoutePins
from policies.rules import RulesPolicy
from policies.safety.verdict import SafetyClass, SafetyVerdict
from router.types import Call, Decision, Route, Session

POLICY = "rehearsal"

# What is diverted per channel by default: the shell runs in a disposable sandbox
# with no network, so only destructive commands; elsewhere anything that writes.
DEFAULT_DIVERT: Mapping[str, frozenset[SafetyClass]] = {
    "shell": frozenset({SafetyClass.DESTRUCTIVE}),
    "mcp": frozenset({SafetyClass.SIDE_EFFECT, SafetyClass.DESTRUCTIVE}),
    "http": frozenset({SafetyClass.SIDE_EFFECT, SafetyClass.DESTRUCTIVE}),
    "browser": frozenset({SafetyClass.SIDE_EFFECT, SafetyClass.DESTRUCTIVE}),
}
_OTHER_CHANNELS = frozenset({SafetyClass.SIDE_EFFECT, SafetyClass.DESTRUCTIVE})


@dataclass(slots=True)
class RehearsalGate:
    allow: RulesPolicy = field(default_factory=lambda: RulesPolicy([], name="rehearsal.allow"))
    divert: Mapping[str, frozenset[SafetyClass]] = field(default_factory=lambda: dict(DEFAULT_DIVERT))
    on_divert: Route = Route.SIM
    name: str = POLICY
    wants_safety: bool = True

    def __post_init__(self) -> None:
        if self.on_divert not in (Route.SIM, Route.DENY):
            raise PolicyConfigError(f"on_divert must be sim or deny, got {self.on_divert!r}")

    def diverted_classes(self, channel: str) -> frozenset[SafetyClass]:
        return self.divert.get(channel, _OTHER_CHANNELS)

    def decide(self, call: Call, session: Session, safety: SafetyVerdict | None = None) -> Decision | None:
        key = (call.channel, call.server)
        diverted = session.find(Diversions)
        if diverted is not None and key in diverted.environments and session.slice(RoutePins).routes.get(key) is Route.SIM:
            return Decision(
                Route.SIM,
                self.name,
                f"this session's {call.channel} {call.server!r} was diverted to sim earlier in rehearsal: it stays simulated",
            )
        allowed = self.allow.decide(call, session, safety)
        if allowed is not None:
            return allowed
        if safety is None or safety.cls is SafetyClass.UNKNOWN:
            why = safety.reason if safety is not None else "no safety verdict"
            return Decision(self.on_divert, self.name, f"rehearsal fails closed: {why}")
        if not safety.analysed:
            return Decision(
                self.on_divert,
                self.name,
                f"rehearsal keeps a call it could not fully analyse away from real ({safety.cls}: {safety.reason})",
            )
        if safety.cls in self.diverted_classes(call.channel):
            return Decision(self.on_divert, self.name, f"rehearsal diverts {safety.cls} {call.channel} calls ({safety.reason})")
        return None


def after_call(session: Session, call: Call, decision: Decision) -> None:
    """The engine calls this once a call has completed: a call the gate diverted to
    sim pins its session's (channel, server) to sim from then on (a denied call
    changed nothing, so it pins nothing)."""
    if decision.policy != POLICY or decision.route is not Route.SIM:
        return
    key = (call.channel, call.server)
    session.slice(RoutePins).routes[key] = Route.SIM
    session.slice(Diversions).environments.add(key)
