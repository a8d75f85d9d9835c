"""The configured default route: the last word when no other policy answers."""

from __future__ import annotations

from calls import Call, Decision, Route, Session


class ModePolicy:
    name = "mode"

    def __init__(self, route: Route) -> None:
        self.route = Route(route)
        self._decision = Decision(self.route, self.name, f"default mode is {self.route}")

    def decide(self, call: Call, session: Session) -> Decision:
        return self._decision
