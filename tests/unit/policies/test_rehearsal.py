"""The safety gate in the chain and rehearsal: the verdict travels with every
decision; diverted, unparsed and unclassifiable calls never go real."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from kit.calls import make_call

from calls import Call, Decision, Mode, Route, Session
from policies.base import decide
from policies.chain import default_policies
from policies.marks import Diversions, RoutePins
from policies.rehearsal import RehearsalGate, after_call
from policies.rules import RulesPolicy, parse_rule
from policies.safety import SafetyClassifier
from policies.safety.verdict import SafetyClass
from router.config import parse_config
from router.runtime.policy_chain import build_policies

FALLBACK = Decision(Route.REAL, "default", "none")


def shell(command, session="s"):
    return make_call("shell_exec", {"command": command}, channel="shell", session=session)


def chain(config_text: str):
    return build_policies(parse_config(config_text))


def route(policies, call, session=None):
    return decide(policies, call, session or Session(call.session_id), fallback=FALLBACK)


def test_the_verdict_travels_with_whatever_policy_decides():
    policies = default_policies(
        rules=[parse_rule({"match": {"channel": "shell", "command": "ls*"}, "route": "sim", "name": "ls"})],
        mode=Route.REAL,
        classifier=SafetyClassifier(),
    )
    by_rule = route(policies, shell("ls -la"))
    assert (by_rule.route, by_rule.policy, by_rule.safety) == (Route.SIM, "rules:ls", "safe")
    by_mode = route(policies, shell("rm -rf /srv"))
    assert (by_mode.route, by_mode.policy, by_mode.safety) == (Route.REAL, "mode", "destructive")
    assert "recursive delete" in by_mode.safety_reason


@dataclass
class BrokenClassifier:
    def classify(self, call, session=None):
        raise RuntimeError("boom")


def test_a_classifier_exception_is_unknown_outside_rehearsal_and_fails_closed_inside():
    outside = default_policies(rules=[], mode=Route.REAL, classifier=BrokenClassifier())
    decision = route(outside, shell("ls"))
    assert (decision.route, decision.safety) == (Route.REAL, "unknown")
    assert "classification failed: RuntimeError: boom" in decision.safety_reason
    inside = default_policies(rules=[], mode=Route.REAL, classifier=BrokenClassifier(), rehearsal=RehearsalGate())
    decision = route(inside, shell("ls"))
    assert (decision.route, decision.policy, decision.safety) == (Route.SIM, "rehearsal", "unknown")
    assert "fails closed" in decision.reason


@pytest.mark.parametrize("on_divert", ["sim", "deny"])
def test_a_command_the_parser_cannot_parse_stays_away_from_real(on_divert):
    policies = chain(f"mode: rehearsal\nrehearsal:\n  on_divert: {on_divert}\n")
    decision = route(policies, shell('echo "unterminated'))
    assert decision.route == Route(on_divert) and decision.policy == "rehearsal"
    assert decision.safety == "side_effect" and "could not fully analyse" in decision.reason


def test_default_diversions_per_channel():
    policies = chain("mode: rehearsal\n")
    assert route(policies, shell("mkdir build")).route is Route.REAL  # shell: only destructive
    assert route(policies, shell("rm -rf build")).route is Route.SIM
    post = Call("http", "api.example.com", "POST", {"method": "POST", "path": "/v1/items"}, "s")
    get = Call("http", "api.example.com", "GET", {"method": "GET", "path": "/v1/items"}, "s")
    assert route(policies, post).route is Route.SIM  # elsewhere: side effects too
    assert route(policies, get).route is Route.REAL
    assert route(policies, make_call("git_commit", server="git")).route is Route.SIM
    assert route(policies, make_call("get_current_time", server="time")).route is Route.REAL


def test_divert_and_allow_are_configurable():
    policies = chain(
        """
mode: rehearsal
rehearsal:
  divert: {shell: [side_effect, destructive], http: [destructive]}
  allow:
    - match: {command: "rm -rf build*"}
      route: real
      name: build
"""
    )
    assert route(policies, shell("mkdir x")).route is Route.SIM
    allowed = route(policies, shell("cd app && rm -rf build/"))
    assert (allowed.route, allowed.policy, allowed.safety) == (Route.REAL, "rehearsal.allow:build", "destructive")
    post = Call("http", "api.example.com", "POST", {"method": "POST", "path": "/v1/items"}, "s")
    assert route(policies, post).route is Route.REAL


def test_a_diversion_pins_the_session_to_sim_after_the_call():
    policies = chain("mode: rehearsal\n")
    session = Session("s")
    first = route(policies, shell("ls"), session)
    after_call(session, shell("ls"), first)
    assert first.route is Route.REAL and session.slice(RoutePins).routes[("shell", "shell")] is Route.REAL
    diverted = route(policies, shell("rm -rf /srv"), session)
    after_call(session, shell("rm -rf /srv"), diverted)
    assert diverted.route is Route.SIM and session.slice(RoutePins).routes[("shell", "shell")] is Route.SIM
    later = route(policies, shell("ls /srv"), session)  # a read now sees the simulated world
    assert (later.route, later.policy, later.safety) == (Route.SIM, "rehearsal", "safe")
    # a denial changed nothing, so it pins nothing
    denying = chain("mode: rehearsal\nrehearsal:\n  on_divert: deny\n")
    other = Session("o")
    denied = route(denying, make_call("git_push", server="git", session="o"), other)
    after_call(other, make_call("git_push", server="git", session="o"), denied)
    assert denied.route is Route.DENY and not other.slice(Diversions).environments


def test_mode_rehearsal_is_shorthand_and_composes_with_the_section():
    config = parse_config("mode: rehearsal\nrehearsal:\n  on_divert: deny\n")
    assert config.mode is Mode.REAL and config.rehearsal.enabled and config.rehearsal.on_divert == "deny"
    assert parse_config("mode: sim\nrehearsal:\n  enabled: true\n").rehearsal.enabled


def test_rehearsal_config_errors_name_file_line_and_key():
    with pytest.raises(ValueError, match=r"r.yaml:4: rehearsal.allow\[0\].match.comand: unknown match key"):
        parse_config(
            "mode: rehearsal\nrehearsal:\n  allow:\n    - match: {comand: x}\n      route: real\n", source="r.yaml"
        )
    with pytest.raises(
        ValueError,
        match=r"r.yaml:3: rehearsal.divert.shell\[0\]: Input should be 'safe', 'side_effect' or 'destructive'",
    ):
        parse_config("rehearsal:\n  divert:\n    shell: [harmful]\n", source="r.yaml")


def test_the_gate_rejects_routes_other_than_sim_deny_or_fork():
    with pytest.raises(ValueError, match="on_divert must be sim, deny or fork"):
        RehearsalGate(allow=RulesPolicy([]), on_divert=Route.REAL)
    assert RehearsalGate().diverted_classes("shell") == frozenset({SafetyClass.DESTRUCTIVE})
