"""Stateful channels keep the route their session started with; rules still override."""

from kit.calls import make_call

from calls import Decision, Route, Session
from policies.base import decide
from policies.chain import default_policies
from policies.marks import RoutePins
from policies.rules import parse_rule
from policies.sticky import StickyPolicy

FALLBACK = Decision(Route.REAL, "default", "none")


class Alternating:
    """A policy that changes its mind on every call (as a learned router may)."""

    name = "alternating"

    def __init__(self):
        self.calls = 0

    def decide(self, call, session):
        self.calls += 1
        return Decision(Route.SIM if self.calls % 2 else Route.REAL, self.name, "coin")


def shell(command, session="s"):
    return make_call("shell_exec", {"command": command}, channel="shell", session=session)


def test_a_shell_session_keeps_its_first_route():
    policy = StickyPolicy([Alternating()])
    session = Session("s")
    routes = [decide([policy], shell(f"echo {i}"), session, fallback=FALLBACK) for i in range(4)]
    assert [d.route for d in routes] == [Route.SIM] * 4
    assert routes[0].policy == "alternating" and {d.policy for d in routes[1:]} == {"sticky"}


def test_sessions_and_servers_are_pinned_separately_and_mcp_is_not_sticky():
    inner = Alternating()
    policy = StickyPolicy([inner])
    a, b = Session("a"), Session("b")
    assert decide([policy], shell("x", "a"), a, fallback=FALLBACK).route is Route.SIM
    assert decide([policy], shell("x", "b"), b, fallback=FALLBACK).route is Route.REAL
    mcp = make_call("now", server="time", session="a")
    assert [decide([policy], mcp, a, fallback=FALLBACK).route for _ in range(2)] == [Route.SIM, Route.REAL]


def test_rules_override_without_pinning_the_session():
    rules = [parse_rule({"match": {"channel": "shell", "arguments": {"command": r"re:^(ls|cat)\b"}}, "route": "sim"})]
    policies = default_policies(rules=rules, mode=Route.REAL)
    session = Session("s")
    first = decide(policies, shell("ls -la"), session, fallback=FALLBACK)
    second = decide(policies, shell("echo hi > f"), session, fallback=FALLBACK)
    third = decide(policies, shell("cat f"), session, fallback=FALLBACK)
    fourth = decide(policies, shell("rm f"), session, fallback=FALLBACK)
    assert [d.route for d in (first, second, third, fourth)] == [Route.SIM, Route.REAL, Route.SIM, Route.REAL]
    assert first.policy.startswith("rules") and second.policy == "mode" and fourth.policy == "sticky"


def test_deny_and_replay_are_not_pinned():
    class Deny:
        name = "deny-once"

        def __init__(self):
            self.used = False

        def decide(self, call, session):
            if self.used:
                return Decision(Route.REAL, "after", "ok")
            self.used = True
            return Decision(Route.DENY, self.name, "no")

    policy = StickyPolicy([Deny()])
    session = Session("s")
    assert decide([policy], shell("x"), session, fallback=FALLBACK).route is Route.DENY
    assert decide([policy], shell("y"), session, fallback=FALLBACK).route is Route.REAL
    assert session.slice(RoutePins).routes == {("shell", "shell"): Route.REAL}
