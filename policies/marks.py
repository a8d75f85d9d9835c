"""What routing policies remember of a session, as session slices shared by replicas
(calls.SessionSlice), read on every call before the policies decide:

- `RoutePins`: the route a stateful environment (channel, server) is pinned to
  (policies/sticky.py; rehearsal pins what it diverted to sim);
- `Diversions`: the environments rehearsal diverted to sim: they stay simulated
  (without the mark a replica that did not divert would not know the sim pin comes
  from rehearsal, and a read would go real);
- `SideEffects`: the (channel, server, tool) of the real calls with side effects the
  session made: the recordings they may have changed are not replayed to it
  (policies/learned/policy.py).

Marks only grow; a pin once set stays. Fields join names with the unit separator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from calls import Route, SessionSlice

_SEP = "\x1f"


@dataclass(slots=True)
class RoutePins(SessionSlice):
    key: ClassVar[str] = "pins"
    routes: dict[tuple[str, str], Route] = field(default_factory=dict)

    def fields(self) -> dict[str, str]:
        return {f"{channel}{_SEP}{server}": str(route) for (channel, server), route in self.routes.items()}

    def merge(self, fields: Mapping[str, str]) -> None:
        for name, route in fields.items():
            channel, _, server = name.partition(_SEP)
            self.routes[(channel, server)] = Route(route)


@dataclass(slots=True)
class Diversions(SessionSlice):
    key: ClassVar[str] = "diverted"
    environments: set[tuple[str, str]] = field(default_factory=set)

    def fields(self) -> dict[str, str]:
        return {f"{channel}{_SEP}{server}": "1" for channel, server in self.environments}

    def merge(self, fields: Mapping[str, str]) -> None:
        for name in fields:
            channel, _, server = name.partition(_SEP)
            self.environments.add((channel, server))


@dataclass(slots=True)
class SideEffects(SessionSlice):
    key: ClassVar[str] = "side-effects"
    calls: set[tuple[str, str, str]] = field(default_factory=set)

    def fields(self) -> dict[str, str]:
        return {_SEP.join(mark): "1" for mark in self.calls}

    def merge(self, fields: Mapping[str, str]) -> None:
        for name in fields:
            channel, server, tool = (name.split(_SEP, 2) + ["", ""])[:3]
            self.calls.add((channel, server, tool))


# The slices read with every call's claim (the policies decide by them).
ROUTING_MARKS: tuple[type[SessionSlice], ...] = (RoutePins, Diversions, SideEffects)
