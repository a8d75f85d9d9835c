"""The routes a call can take, the modes a config names, and where an answer came from."""

from __future__ import annotations

from enum import StrEnum


class Route(StrEnum):
    REAL = "real"
    SIM = "sim"
    REPLAY = "replay"
    SHADOW = "shadow"  # serve the real side, run the simulated side off the agent's path
    DENY = "deny"
    # run the call for real against a disposable copy of the session's state (a channel
    # that cannot fork is simulated instead, the reason in the record's note)
    FORK = "fork"
    # simroute's own records of an episode's verify and close: nothing was routed, and
    # nothing was refused (router/episodes).
    VERIFY = "verify"
    CLOSE = "close"


class Mode(StrEnum):
    """What a config's `mode` or a rule's `route` names: a route, or `learned`, which
    resolves each call to real, sim or replay (policies/learned)."""

    REAL = "real"
    SIM = "sim"
    REPLAY = "replay"
    SHADOW = "shadow"
    DENY = "deny"
    FORK = "fork"
    LEARNED = "learned"

    @property
    def route(self) -> Route | None:
        """The route this mode always takes; None for `learned` (decided per call)."""
        return None if self is Mode.LEARNED else Route(self.value)


class Provenance(StrEnum):
    """Where an observation came from. Travels with the observation so that a
    simulator error never looks like an agent error."""

    REAL = "real"
    SIM = "sim"
    REPLAY = "replay"
    # the real program's answer on a throwaway copy of the session's state: never a
    # replay source, an exported real observation, nor a label of the real side
    FORK = "fork"
    NONE = "none"  # produced by simroute itself: a denial, a validation error
