"""Rehearsal: whatever would change the real world is simulated (or denied).

`RehearsalGate` runs after the safety classifier, before the ordinary rules:
- a (channel, server) of the session already diverted stays simulated (or on its
  fork), so its later reads see the world the agent changed;
- `rehearsal.allow` rules answer next (e.g. `rm -rf build/` may run for real);
- a call whose class is diverted on its channel goes to `on_divert` (sim, deny, or
  fork: a throwaway copy of the real state where the channel can fork, else sim).
  A call the classifier could not classify (it raised) or could not fully analyse
  (a shell line that did not parse) is diverted too: rehearsal fails closed.

`after_call` is the engine's hook once a call completed: a diversion re-pins the
session's (channel, server) to sim (or fork).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from calls import Call, Decision, Route, Session
from policies.errors import PolicyConfigError
from policies.marks import Diversions, RoutePins
from policies.rules import RulesPolicy
from policies.safety.verdict import SafetyClass, SafetyVerdict

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
_DIVERT_ROUTES = (Route.SIM, Route.DENY, Route.FORK)
_PINNED = frozenset({Route.SIM, Route.FORK})  # where a diverted environment stays


@dataclass(slots=True)
class RehearsalGate:
    allow: RulesPolicy = field(default_factory=lambda: RulesPolicy([], name="rehearsal.allow"))
    divert: Mapping[str, frozenset[SafetyClass]] = field(default_factory=lambda: dict(DEFAULT_DIVERT))
    on_divert: Route = Route.SIM
    # The channels whose calls can run on a fork (on_divert fork), or one server of a
    # channel as `channel:server` (an MCP server whose state is local); the others are simulated.
    forkable: frozenset[str] = frozenset()
    name: str = POLICY
    wants_safety: bool = True

    def __post_init__(self) -> None:
        if self.on_divert not in _DIVERT_ROUTES:
            raise PolicyConfigError(f"on_divert must be sim, deny or fork, got {self.on_divert!r}")

    def can_fork(self, call: Call) -> bool:
        return call.channel in self.forkable or f"{call.channel}:{call.server}" in self.forkable

    def diverted_classes(self, channel: str) -> frozenset[SafetyClass]:
        return self.divert.get(channel, _OTHER_CHANNELS)

    def decide(self, call: Call, session: Session, safety: SafetyVerdict | None = None) -> Decision | None:
        key = (call.channel, call.server)
        diverted = session.find(Diversions)
        pinned = (
            session.slice(RoutePins).routes.get(key) if diverted is not None and key in diverted.environments else None
        )
        if pinned is not None and pinned in _PINNED:
            stays = "simulated" if pinned is Route.SIM else "on its fork"
            return Decision(
                pinned,
                self.name,
                f"this session's {call.channel} {call.server!r} was diverted to {pinned} earlier in rehearsal:"
                f" it stays {stays}",
            )
        allowed = self.allow.decide(call, session, safety)
        if allowed is not None:
            return allowed
        if safety is None or safety.cls is SafetyClass.UNKNOWN:
            why = safety.reason if safety is not None else "no safety verdict"
            return self._divert(call, f"rehearsal fails closed: {why}")
        if not safety.analysed:
            return self._divert(
                call,
                f"rehearsal keeps a call it could not fully analyse away from real ({safety.cls}: {safety.reason})",
            )
        if safety.cls in self.diverted_classes(call.channel):
            return self._divert(call, f"rehearsal diverts {safety.cls} {call.channel} calls ({safety.reason})")
        return None

    def _divert(self, call: Call, reason: str) -> Decision:
        if self.on_divert is Route.FORK and not self.can_fork(call):
            # (An MCP server forks when its config names its local state: `mcp:<server>`.)
            return Decision(
                Route.SIM, self.name, f"{reason}; the {call.channel} channel cannot fork, so it is simulated"
            )
        return Decision(self.on_divert, self.name, reason)


def after_call(session: Session, call: Call, decision: Decision) -> None:
    """The engine calls this once a call has completed: a call the gate diverted to
    sim (or fork) pins its session's (channel, server) there from then on (a denied
    call changed nothing, so it pins nothing)."""
    if decision.policy != POLICY or decision.route not in _PINNED:
        return
    key = (call.channel, call.server)
    session.slice(RoutePins).routes[key] = decision.route
    session.slice(Diversions).environments.add(key)
