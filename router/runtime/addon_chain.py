"""The call addons a config describes, in the order the engine tells them each event
(router/engine/addons.py): a virtual server's decision is rewritten before a
perturbation is decided for it; the upstream guard brackets the real send; the
trace span ends before the shadow work that is its child is submitted."""

from __future__ import annotations

from backends.world_model.facts import StatedFacts
from calls import SessionSlice
from policies import learned, rehearsal
from policies.marks import ROUTING_MARKS
from policies.virtual import VirtualServers
from router.addons.noise import NoiseWatch
from router.addons.perturbation.addon import Perturber
from router.addons.policy_marks import AfterCall, PolicyMarks
from router.addons.shadow_sampling import ShadowSampling
from router.addons.shell_state import ShellStateKeeper
from router.addons.stated_facts import FactKeeper
from router.addons.tracing import CallTracer
from router.addons.upstream_guard.guard import UpstreamGuard
from router.addons.virtual_servers import VirtualServerRoutes
from router.addons.world_state import WorldStateKeeper, WorldVersions, workspace_reader
from router.config import Config
from router.engine.addons import CallAddon
from router.runtime.state_shadow import state_answer
from shadow.noise_learner import NoiseLearner
from shadow.runner import ShadowQueue


def shared_slices() -> list[type[SessionSlice]]:
    """The session slices every call reads from shared state (with its claim, in one
    round trip): the marks the policies decide by, the facts the world model is told,
    which save of the session's world Redis holds."""
    return [*ROUTING_MARKS, StatedFacts, WorldVersions]


def policy_after_calls() -> list[AfterCall]:
    """What policies learn from each finished call: rehearsal's diversions (a diverted
    call keeps its server simulated), the learned router's side-effect marks (a real
    side effect makes that server's recordings stale to the session)."""
    return [rehearsal.after_call, learned.after_call]


def default_addons(
    config: Config,
    *,
    virtual: VirtualServers,
    noise: NoiseLearner,
    shadow: ShadowQueue,
    guard: UpstreamGuard | None = None,
    tracer: CallTracer | None = None,
) -> list[CallAddon]:
    """Every per-call feature of the config, in order; `guard` None: no upstream guard,
    `tracer` None: tracing off (no span made)."""
    addons: list[CallAddon | None] = [
        VirtualServerRoutes(virtual) if virtual else None,
        Perturber.from_config(config.perturbations),
        guard,
        # Real answers to repeated calls teach the noise table, off the agent's path; a
        # sample of calls known read-only is made again: pairs without repeated agent calls.
        NoiseWatch(noise, probe_rate=config.shadow.noise_probe_rate),
        # The facts answers state are given back to the world model, in sessions it may answer.
        FactKeeper(limit=config.world_model.facts_kept, every_session=config.may_simulate()),
        PolicyMarks(policy_after_calls()),
        ShellStateKeeper(),
        # Each session's world kept outside the model, learnt from every route's answer.
        WorldStateKeeper(on_for=config.world_state.on_for, workspace_files=workspace_reader(config.shell_workspace))
        if config.world_state.enabled
        else None,
        tracer,
        ShadowSampling(
            shadow,
            rate=config.shadow.rate,
            state_answer=state_answer(
                config.world_state.on_for,
                screen_lines=config.shell.screen_lines,
                screen_chars=config.shell.screen_chars,
            )
            if config.world_state.enabled
            else None,
        ),
    ]
    return [addon for addon in addons if addon is not None]
