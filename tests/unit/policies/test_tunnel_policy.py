from calls import Call, Decision, Mode, Route, Session
from policies.base import decide
from policies.chain import default_policies
from policies.rules import parse_rule

FALLBACK = Decision(Route.REAL, "default", "")


def tcp(server: str) -> Call:
    return Call("http", server, "TCP", {"address": server}, "s")


def test_raw_tcp_is_denied_in_every_mode_unless_a_rule_opens_it():
    for mode in (m.route for m in Mode if m.route is not None):  # every mode a config can name
        decision = decide(default_policies(rules=[], mode=mode), tcp("db:5432"), Session("s"), fallback=FALLBACK)
        assert (decision.route, decision.policy) == (Route.DENY, "http-tcp") and "db:5432" in decision.reason
    rules = [
        parse_rule({"name": "db", "match": {"channel": "http", "tool": "TCP", "server": "db:5432"}, "route": "real"})
    ]
    assert (
        decide(default_policies(rules=rules, mode=Route.DENY), tcp("db:5432"), Session("s"), fallback=FALLBACK).route
        is Route.REAL
    )
    assert (
        decide(default_policies(rules=rules, mode=Route.REAL), tcp("db:5433"), Session("s"), fallback=FALLBACK).route
        is Route.DENY
    )
    http_get = Call("http", "api.test", "GET", {}, "s")
    assert (
        decide(default_policies(rules=[], mode=Route.REAL), http_get, Session("s"), fallback=FALLBACK).policy == "mode"
    )
