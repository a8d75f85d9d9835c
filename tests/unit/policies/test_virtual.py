"""A virtual server's calls never go to a real side, whatever a policy chose."""

import pytest
from kit.calls import make_call

from calls import Call, Decision, Route
from policies.virtual import VirtualServers

SERVERS = VirtualServers({"weather": None, "clock": "golden"})


def routed(route: Route, server: str, channel: str = "mcp") -> Decision:
    return SERVERS.route(
        make_call(server=server, channel=channel), Decision(route, "rules", "rule 0", safety="safe", deadline_s=3.0)
    )


@pytest.mark.parametrize(
    ("chosen", "unbacked", "backed"),
    [
        (Route.REAL, Route.SIM, Route.REPLAY),
        (Route.SHADOW, Route.SIM, Route.REPLAY),
        (Route.REPLAY, Route.REPLAY, Route.REPLAY),
        (Route.SIM, Route.SIM, Route.SIM),
        (Route.DENY, Route.DENY, Route.DENY),
    ],
)
def test_each_route_of_a_virtual_server(chosen, unbacked, backed):
    assert routed(chosen, "weather").route is unbacked
    assert routed(chosen, "clock").route is backed


def test_a_rewritten_decision_says_what_it_replaced_and_keeps_the_gate_and_the_deadline():
    decision = routed(Route.REAL, "clock")
    assert decision.policy == "virtual"
    assert decision.reason.startswith("'clock' is a virtual server with no real side: rules chose real (rule 0)")
    assert "recording 'golden'" in decision.reason
    assert (decision.safety, decision.deadline_s, decision.shadow_rate) == ("safe", 3.0, None)


def test_other_servers_and_channels_keep_their_route():
    assert routed(Route.REAL, "notes").route is Route.REAL
    assert routed(Route.REAL, "weather", channel="http").route is Route.REAL
    assert not VirtualServers() and SERVERS.recording_of(Call("mcp", "clock", "t", {}, "s")) == "golden"
