"""The `perturbations` section and a rule's `perturbation`, loaded from YAML."""

import pytest

from router.config import ConfigError, parse_config
from router.reports.explain import Explainer, call_from_json

CONFIG = """
mcpServers:
  files: {command: python, args: [server.py]}
perturbations:
  apply: flaky
  plans:
    flaky:
      seed: 11
      rules:
        - {name: writes-fail, kind: error, status: 500, match: {tool: "write_*"}}
        - {name: slow, kind: latency, delay_s: {distribution: uniform, low_s: 0.1, high_s: 0.2}}
    limited:
      rules:
        - {kind: rate_limit, limit: 10, window: 20}
rules:
  - match: {tool: search}
    route: real
    perturbation: limited
"""


def test_plans_load_and_explain_shows_the_plan_the_rules_and_the_first_calls_perturbation():
    config = parse_config(CONFIG)
    assert config.perturbations.plans["flaky"].seed == 11 and config.parsed_rules()[0].perturbation == "limited"
    explainer = Explainer(config)
    write = explainer.explain(call_from_json({"name": "write_file", "arguments": {"path": "a"}}, config))
    assert write["perturbation"] == {
        "plan": "flaky",
        "rules_matching": ["flaky:writes-fail", "flaky:slow"],
        "first_call": {"kind": "error", "rule": "flaky:writes-fail", "seed": 11, "n": 1},
    }
    search = explainer.explain(call_from_json({"name": "search"}, config))
    assert search["perturbation"] == {
        "plan": "limited",
        "rules_matching": ["limited:rate_limit[0]"],
        "first_call": None,
    }


def test_a_rule_naming_an_unknown_plan_is_an_error_with_its_line():
    with pytest.raises(
        ConfigError, match=r"<config>:4: rules\[0\]\.perturbation: 'nope' is not one of perturbations.plans"
    ):
        parse_config("rules:\n  - match: {tool: x}\n    route: real\n    perturbation: nope\n")


def test_a_bad_perturbation_rule_names_its_place():
    text = "perturbations:\n  plans:\n    p:\n      rules:\n        - {kind: latency}\n"
    with pytest.raises(ConfigError, match=r"perturbations\.plans\.p\.rules\[0\]: a latency rule needs delay_s"):
        parse_config(text)
