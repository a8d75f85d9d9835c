"""The learned mode and rule action in the config file."""

from __future__ import annotations

import pytest
from kit.calls import make_call

from calls import Decision, Mode, Route, Session
from policies.base import decide
from router.config import ConfigError, parse_config
from router.runtime.policy_chain import build_policies

FALLBACK = Decision(Route.REAL, "default", "")


def test_mode_learned_with_its_section_and_prices(tmp_path):
    config = parse_config(
        "mode: learned\nlearned:\n  target_fidelity: 0.95\n  explore_rate: 0\ncost:\n  github: {create_*: 5}\n",
        base_dir=tmp_path,
    )
    assert (
        config.mode is Mode.LEARNED and config.uses_learned() and config.may_simulate() and config.may_run_real("mcp")
    )
    assert config.learned_model_path == tmp_path / ".simroute" / "router.skops"
    decided = decide(build_policies(config), make_call("get_issue", server="github"), Session("s"), fallback=FALLBACK)
    # No model and no labels yet: the per-tool estimate keeps the call real.
    assert (
        decided.route is Route.REAL and decided.policy == "learned" and "per-tool estimate, 0 labels" in decided.reason
    )
    from router.runtime.policy_chain import learned_settings

    assert (
        learned_settings(config).real_price("github", "create_issue") == 5
        and learned_settings(config).real_price("github", "x") == 1.0
    )


def test_rule_route_learned_and_rehearsal_composes():
    config = parse_config(
        "mode: real\nrehearsal: {enabled: true}\nlearned: {explore_rate: "
        "0}\nrules:\n  - {match: {server: git}, route: learned}\n"
    )
    assert config.mode is Mode.REAL and config.uses_learned()
    chain = build_policies(config)
    diverted = decide(chain, make_call("git_reset", server="git"), Session("s"), fallback=FALLBACK)
    assert diverted.policy == "rehearsal" and diverted.route is Route.SIM  # the gate runs first
    learned = decide(chain, make_call("git_status", server="git"), Session("s"), fallback=FALLBACK)
    assert learned.policy == "learned" and learned.reason.startswith("rules:rule[0] -> ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mode: learnt\n", "mode: 'learnt' is not one of real, sim, replay, shadow, deny, learned, rehearsal"),
        (
            "rules:\n  - {match: {}, route: clever}\n",
            "rules[0].route: 'clever' is not one of real, sim, replay, shadow, deny, learned",
        ),
        ("learned:\n  target_fidelity: 2\n", "learned.target_fidelity"),
        ("learned:\n  explore: 0.1\n", "learned.explore: unknown key"),
    ],
)
def test_errors_name_the_key(text, message):
    with pytest.raises(ConfigError) as error:
        parse_config(text, source="s.yaml")
    assert message in str(error.value)
