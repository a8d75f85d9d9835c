"""An episode's own policy chain: its route (a mode, or a mode with rules) in place of
the config's mode and rules, built like the runtime's (router/runtime/policy_chain.py)
so the safety gate, rehearsal and the learned router behave as they do everywhere.
RL runs reuse one route for thousands of episodes: each distinct route is built once."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from calls import Call, EpisodeSetup, Mode, Route, Session
from policies.base import Policy, decide
from policies.errors import PolicyConfigError
from policies.marks import Diversions, RoutePins
from router.episodes.options import EpisodeOptions, EpisodeOptionsError, RoutePlan
from router.runtime.policy_chain import build_policies

if TYPE_CHECKING:
    from router.runtime.parts import EpisodeParts


class EpisodeRoutes:
    def __init__(self, parts: EpisodeParts) -> None:
        self.parts = parts
        self._chains: dict[str, list[Policy]] = {}

    def chain(self, options: EpisodeOptions) -> list[Policy] | None:
        """The episode's chain; None: the runtime's own (the reset named no route).
        Raises EpisodeOptionsError for rules that do not parse or a route this runtime
        cannot serve."""
        route = options.route
        if route is None:
            return None
        plan = route if isinstance(route, RoutePlan) else RoutePlan(mode=route)
        key = json.dumps(plan.model_dump(), sort_keys=True, default=str)
        chain = self._chains.get(key)
        if chain is None:
            chain = self._chains[key] = self._build(plan)
        return chain

    def _build(self, plan: RoutePlan) -> list[Policy]:
        config = self.parts.mcp.config
        update: dict[str, Any] = {
            "mode": Mode.REAL if plan.mode == "rehearsal" else Mode(plan.mode),
            "rules": plan.rules,
        }
        if plan.mode == "rehearsal":
            update["rehearsal"] = config.rehearsal.model_copy(update={"enabled": True})
        episode_config = config.model_copy(update=update)
        try:
            episode_config.parsed_rules()  # a bad rule is the reset's error, not the first call's
        except PolicyConfigError as exc:
            raise EpisodeOptionsError(f"invalid episode options: route.rules: {exc}") from exc
        learned = self.parts.learned
        if episode_config.uses_learned() and learned is None:
            raise EpisodeOptionsError(
                "invalid episode options: route: the learned router is not running in this server "
                "(it runs when the config's mode or a rule is `learned`)"
            )
        return build_policies(
            episode_config,
            tools_meta=self.parts.mcp.tool_catalog.lookup,
            learned=learned,
            holds=[self.parts.mcp.pins],  # an episode's routes do not release a tool the pins hold
        )


def shell_is_real(session: Session, default: list[Policy]) -> bool:
    """Whether the episode's shell is its real sandbox: the route its shell is pinned to
    once it ran, else the one its policies give a harmless command now (decided on a
    scratch session: nothing is pinned on the episode)."""
    diverted = session.find(Diversions)
    if diverted is not None and ("shell", "shell") in diverted.environments:
        return False
    pinned = session.slice(RoutePins).routes.get(("shell", "shell"))
    if pinned is None:
        setup = session.episode
        probe = Session(id=session.id)
        if setup is not None:
            probe.slices[EpisodeSetup] = setup
        own = setup.policies if setup is not None and setup.policies else default
        call = Call("shell", "shell", "shell_exec", {"command": "true"}, session.id)
        pinned = decide(list(own), call, probe, fallback=None).route  # type: ignore[arg-type]
    return pinned in (Route.REAL, Route.SHADOW)
