import pytest

from policies import default_policies, parse_rule
from policies.base import decide
from router.types import Call, Decision, Route, Session


def call(tool="get_current_time", server="time", **arguments):
    return Call("mcp", server, tool, arguments, "s1")


FALLBACK = Decision(Route.REAL, "default", "none")


def route_of(rules, c, mode=Route.REAL):
    return decide(default_policies(rules=[parse_rule(r, index=i) for i, r in enumerate(rules)], mode=mode), c, Session("s1"), fallback=FALLBACK)


def test_first_matching_rule_wins_then_mode():
    rules = [
        {"match": {"tool": "get_*"}, "route": "replay", "name": "clock"},
        {"match": {"server": "time"}, "route": "deny"},
    ]
    assert route_of(rules, call()) == Decision(Route.REPLAY, "rules:clock", "matched clock")
    assert route_of(rules, call("convert_time")).route is Route.DENY
    assert route_of(rules, call(server="other", tool="x"), mode=Route.SIM) == Decision(Route.SIM, "mode", "default mode is sim")


def test_argument_paths_regex_glob_and_literals():
    rule = parse_rule({"match": {"arguments": {"where.city": "re:^Os", "opts.0": "fast", "limit": 5, "dry": True}}, "route": "sim"})
    assert rule.matches(call(where={"city": "Oslo"}, opts=["fast"], limit=5, dry=True))
    assert not rule.matches(call(where={"city": "Bergen"}, opts=["fast"], limit=5, dry=True))
    assert not rule.matches(call(where={"city": "Oslo"}, opts=["fast"], limit=6, dry=True))
    assert not rule.matches(call(opts=["fast"], limit=5, dry=True))  # missing path never matches
    glob = parse_rule({"match": {"arguments": {"path": "/tmp/*"}}, "route": "sim"})
    assert glob.matches(call(path="/tmp/a")) and not glob.matches(call(path="/etc/a"))


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"match": {"tool": "x"}}, "route: missing"),
        ({"match": {"tol": "x"}, "route": "sim"}, "match.tol: unknown match key"),
        ({"match": "x", "route": "sim"}, "match: must be a mapping"),
        ("not a mapping", "a rule must be a mapping"),
    ],
)
def test_parse_errors_name_the_key(rule, message):
    with pytest.raises(ValueError, match=message):
        parse_rule(rule)
