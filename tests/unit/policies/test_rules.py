import pytest
from kit.calls import make_call

from calls import Call, Decision, Route, Session
from policies.base import decide
from policies.chain import default_policies
from policies.rules import parse_rule


def call(tool="get_current_time", server="time", **arguments):
    return Call("mcp", server, tool, arguments, "s1")


FALLBACK = Decision(Route.REAL, "default", "none")


def route_of(rules, c, mode=Route.REAL):
    return decide(
        default_policies(rules=[parse_rule(r, index=i) for i, r in enumerate(rules)], mode=mode),
        c,
        Session("s1"),
        fallback=FALLBACK,
    )


def test_first_matching_rule_wins_then_mode():
    rules = [
        {"match": {"tool": "get_*"}, "route": "replay", "name": "clock"},
        {"match": {"server": "time"}, "route": "deny"},
    ]
    assert route_of(rules, call()) == Decision(Route.REPLAY, "rules:clock", "matched clock")
    assert route_of(rules, call("convert_time")).route is Route.DENY
    assert route_of(rules, call(server="other", tool="x"), mode=Route.SIM) == Decision(
        Route.SIM, "mode", "default mode is sim"
    )


def test_argument_paths_regex_glob_and_literals():
    rule = parse_rule(
        {"match": {"arguments": {"where.city": "re:^Os", "opts.0": "fast", "limit": 5, "dry": True}}, "route": "sim"}
    )
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


def http_call(method="POST", url="https://api.example.com:8443/v1/charges?x=1", body=None):
    from backends.http.messages import HttpSettings, make_call

    return make_call(
        method=method,
        url=url,
        headers=[("Content-Type", "application/json")],
        body=body or b"",
        session_id="s1",
        settings=HttpSettings(),
    )


def test_http_keys_host_without_port_method_and_path():
    rule = parse_rule(
        {"match": {"host": "*.example.com", "method": "re:^(POST|PUT)$", "path": "/v1/charges"}, "route": "deny"}
    )
    assert rule.matches(http_call())
    assert not rule.matches(http_call(method="GET"))
    assert not rule.matches(http_call(url="https://api.example.com/v1/refunds"))
    assert not rule.matches(call())  # an MCP call has no host, method or path
    browser = make_call("browser_navigate", {"url": "https://shop.example.com/cart"}, channel="browser", session="s1")
    assert parse_rule({"match": {"host": "shop.example.com", "path": "/cart"}, "route": "sim"}).matches(browser)


def test_command_key_matches_any_unwrapped_simple_command():
    rule = parse_rule({"match": {"command": "rm -rf build*"}, "route": "real"})
    shell = lambda command: make_call("shell_exec", {"command": command}, channel="shell", session="s1")  # noqa: E731
    assert rule.matches(shell("rm -rf build/"))
    assert rule.matches(shell("cd app && sudo bash -c 'rm -rf build'"))
    assert not rule.matches(shell("rm -rf /"))
    assert not rule.matches(shell("echo 'rm -rf build'"))  # quoted text is not a command
    assert parse_rule({"match": {"command": "re:^git push"}, "route": "sim"}).matches(
        shell("env GIT_TRACE=1 git push -f")
    )


def test_json_path_argument_keys():
    rule = parse_rule({"match": {"arguments": {"$.items[*].sku": "re:^GIFT-", "$..token": "*"}}, "route": "deny"})
    assert rule.matches(call(items=[{"sku": "A-1"}, {"sku": "GIFT-9"}], auth={"token": "t"}))
    assert not rule.matches(call(items=[{"sku": "A-1"}], auth={"token": "t"}))
    assert not rule.matches(call(items=[{"sku": "GIFT-1"}]))  # no token anywhere
    body = parse_rule({"match": {"arguments": {"$.body.amount": 5}}, "route": "sim"})
    assert body.matches(http_call(body=b'{"amount": 5}'))


def test_session_key_routes_named_sessions_apart():
    rehearsal = parse_rule({"match": {"session": "rehearsal-*", "channel": "http"}, "route": "sim"})
    assert rehearsal.matches(Call("http", "http://api:8080", "POST", {"path": "/notes"}, "rehearsal-3"))
    assert not rehearsal.matches(Call("http", "http://api:8080", "POST", {"path": "/notes"}, "recording-1"))
    assert not rehearsal.matches(Call("mcp", "git", "git_status", {}, "rehearsal-3"))


def test_safety_key_and_actions():
    from policies.safety import SafetyClassifier

    rules = [
        {"match": {"safety": ["destructive", "unknown"]}, "route": "deny", "name": "no-harm"},
        {"match": {"safety": "safe"}, "route": "real", "shadow_rate": 0.25, "deadline_s": 5, "name": "reads"},
    ]
    chain = default_policies(
        rules=[parse_rule(r, index=i) for i, r in enumerate(rules)], mode=Route.SIM, classifier=SafetyClassifier()
    )
    harm = decide(chain, call("delete_repo", server="gh"), Session("s1"), fallback=FALLBACK)
    assert (harm.route, harm.policy, harm.safety) == (Route.DENY, "rules:no-harm", "destructive")
    read = decide(chain, call(), Session("s1"), fallback=FALLBACK)
    assert (read.route, read.shadow_rate, read.deadline_s) == (Route.REAL, 0.25, 5.0)
    assert not parse_rule({"match": {"safety": "safe"}, "route": "sim"}).matches(call())  # no verdict: no match


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"match": {"safety": "harmless"}, "route": "sim"}, "match.safety: 'harmless' is not one of"),
        ({"match": {"command": "re:("}, "route": "sim"}, "match.command: invalid regular expression"),
        ({"match": {"arguments": {"$.a[": 1}}, "route": "sim"}, r"match.arguments.\$.a\[: invalid JSONPath"),
        ({"route": "real", "shadow_rate": 2}, "shadow_rate: must be >= 0 and <= 1"),
        ({"route": "real", "deadline_s": 0}, "deadline_s: must be > 0"),
        ({"route": "real", "deadline_s": "soon"}, "deadline_s: must be a number"),
    ],
)
def test_new_keys_errors_name_the_key(rule, message):
    with pytest.raises(ValueError, match=message):
        parse_rule(rule)


def test_config_errors_for_new_keys_name_file_and_line():
    from router.config import ConfigError, parse_config

    text = "rules:\n  - match:\n      host: api.example.com\n      safety: harmless\n    route: sim\n"
    with pytest.raises(ConfigError, match=r"c.yaml:4: rules\[0\].match.safety: 'harmless' is not one of"):
        parse_config(text, source="c.yaml")
    with pytest.raises(ConfigError, match=r"c.yaml:3: rules\[0\].shadow_rate: must be"):
        parse_config("rules:\n  - route: real\n    shadow_rate: -1\n", source="c.yaml")
