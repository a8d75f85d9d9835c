"""Stateful environments keep their side for the whole session.

A shell or a browser holds state (files, cwd, the open page): hopping between a
real sandbox and a simulated one would show the agent two different worlds. The
first route the wrapped policies choose for a session's (channel, server) is
pinned in the session and answers from then on. Rules run before this policy
and are not pinned: a rule may still send, say, read-only commands to the world
model (which is given the real history).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from calls import Call, Decision, Route, Session
from policies.base import Policy
from policies.marks import RoutePins
from policies.safety.policy import decide_with
from policies.safety.verdict import SafetyVerdict

STATEFUL_CHANNELS = frozenset({"shell", "browser"})
_PINNABLE = frozenset({Route.REAL, Route.SIM, Route.SHADOW})


class StickyPolicy:
    name = "sticky"
    wants_safety = True  # handed on to the wrapped policies that want it (the learned router)

    def __init__(self, inner: Sequence[Policy], *, channels: Iterable[str] = STATEFUL_CHANNELS) -> None:
        self.inner = list(inner)
        self.channels = frozenset(channels)

    def decide(self, call: Call, session: Session, safety: SafetyVerdict | None = None) -> Decision | None:
        key = (call.channel, call.server)
        pins = session.slice(RoutePins).routes
        if call.channel in self.channels and (pinned := pins.get(key)) is not None:
            return Decision(
                pinned, self.name, f"this session's {call.channel} stays {pinned} (chosen at its first call)"
            )
        decision = decide_with(self.inner, call, session, safety)
        if decision is not None and call.channel in self.channels and decision.route in _PINNABLE:
            pins[key] = decision.route
        return decision
