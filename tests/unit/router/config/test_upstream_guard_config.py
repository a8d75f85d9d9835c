"""The `upstream_guard` section: defaults, per-upstream overrides over them, and clear errors."""

from __future__ import annotations

import pytest

from router.config import ConfigError, parse_config


def test_the_defaults_guard_with_a_breaker_only():
    limits = parse_config("{}").upstream_guard.limits_for("anything")
    assert limits == {
        "max_concurrent": None,
        "budget": None,
        "budget_window_s": 60.0,
        "breaker_failures": 5,
        "breaker_cooldown_s": 30.0,
    }


def test_an_override_replaces_only_the_keys_it_sets():
    config = parse_config(
        """
upstream_guard:
  defaults: {breaker_failures: 3, max_concurrent: 8}
  upstreams:
    github: {max_concurrent: 2}
    api.example.com:8443: {budget: 100, budget_window_s: 3600}
    shell: {breaker_failures: 0}
"""
    ).upstream_guard
    assert config.limits_for("github") == {**config.limits_for("other"), "max_concurrent": 2}
    assert config.limits_for("other")["breaker_failures"] == 3 and config.limits_for("github")["breaker_failures"] == 3
    assert (
        config.limits_for("api.example.com:8443")["budget"] == 100
        and config.limits_for("api.example.com:8443")["max_concurrent"] == 8
    )
    assert config.limits_for("shell")["breaker_failures"] == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("upstream_guard: {defaults: {max_concurrent: 0}}", "upstream_guard.defaults.max_concurrent"),
        ("upstream_guard: {defaults: {breaker_failures: -1}}", "upstream_guard.defaults.breaker_failures"),
        (
            "upstream_guard: {upstreams: {github: {budget_window_s: 0}}}",
            "upstream_guard.upstreams.github.budget_window_s",
        ),
        ("upstream_guard: {upstreams: {github: {cap: 1}}}", "cap"),
        ("upstream_guard: {upstreams: {'a b': {budget: 1}}}", "an upstream is an MCP server's name"),
    ],
)
def test_bad_limits_are_config_errors_naming_the_key(text, expected):
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="s.yaml")
    assert expected in str(info.value)
