"""The policy chain a config describes: safety gate, rehearsal, rules, mode."""

from __future__ import annotations

from collections.abc import Sequence

from calls import Route
from policies.base import Policy
from policies.chain import default_policies
from policies.learned import LearnedPolicy, LearnedSettings
from policies.learned.tenancy import Tenancy
from policies.rehearsal import RehearsalGate
from policies.rules import RulesPolicy
from policies.safety import SafetyClassifier, ToolLookup, no_tools
from policies.safety.verdict import SafetyClass
from policies.virtual import VirtualServers
from router.auth import configured_tokens
from router.config import Config
from router.engine.replay_modes import ReplayModes


def forkable_mcp(config: Config) -> frozenset[str]:
    """The stdio MCP servers naming local state (`mcpServers.<name>.state`), as `mcp:<name>`."""
    return frozenset(f"mcp:{name}" for name, spec in config.real_upstreams.items() if getattr(spec, "state", None))


def rehearsal_gate(config: Config, learned: LearnedPolicy | None = None) -> RehearsalGate | None:
    section = config.rehearsal
    if not section.enabled:
        return None
    gate = RehearsalGate(
        allow=RulesPolicy(config.parsed_allow_rules(), name="rehearsal.allow", learned=learned),
        on_divert=Route(section.on_divert),
        forkable=frozenset({"shell"} if config.shell.enabled else ()) | forkable_mcp(config),
    )
    for channel, classes in section.divert.items():
        gate.divert = {**gate.divert, channel: frozenset(SafetyClass(c) for c in classes)}
    return gate


def replay_modes(config: Config) -> ReplayModes:
    """What replay does on a miss and whether it records."""
    return ReplayModes(
        config.replay.record_mode, config.replay.on_miss, config.replay.recording, virtual=virtual_servers(config)
    )


def learned_settings(config: Config) -> LearnedSettings:
    section = config.learned
    return LearnedSettings(
        target_fidelity=section.target_fidelity,
        min_labels=section.min_labels,
        explore_rate=section.explore_rate,
        latency_weight=section.latency_weight,
        sim_price=section.sim_price,
        prices=config.cost,
        simulate_side_effects=section.simulate_side_effects,
        replay_min_sessions=section.replay_min_sessions,
    )


def learned_tenancy(config: Config) -> Tenancy:
    """How the learned router keeps token namespaces apart (per token when tokens are on)."""
    return Tenancy(configured_tokens(config.service.tokens).enabled, tuple(config.service.shared_namespaces))


def build_policies(
    config: Config,
    *,
    tools_meta: ToolLookup = no_tools,
    learned: LearnedPolicy | None = None,
    holds: Sequence[Policy] = (),
) -> list[Policy]:
    """The chain; `learned`: the learned router to use when the config hands calls to it
    (default: one with no model and no statistics yet, which keeps calls real); `holds`:
    what holds calls before any rule (the tool-definition pins)."""
    classifier = SafetyClassifier(config.safety.settings(), tools_meta)
    if learned is None and config.uses_learned():
        learned = LearnedPolicy(learned_settings(config))
    if not config.uses_learned():
        learned = None
    return default_policies(
        rules=config.parsed_rules(),
        mode=config.mode,
        classifier=classifier,
        rehearsal=rehearsal_gate(config, learned),
        learned=learned,
        holds=holds,
    )


def virtual_servers(config: Config) -> VirtualServers:
    """The config's virtual MCP servers and their recordings: no decision sends them real."""
    return VirtualServers({name: spec.recording for name, spec in config.virtual_servers.items()})
