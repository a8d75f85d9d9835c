"""Rehearsal through the engine (a real SQLite record store, the config's policy
chain): what a diverted call leaves behind for the session's later calls, and what
never reaches the real side."""

from __future__ import annotations

import pytest
from kit.calls import make_call
from kit.engine import FakeReal, FakeSimulator, make_engine

from calls import Call, Provenance, Route, Session
from router.config import parse_config
from router.runtime.policy_chain import build_policies

# (the write the gate diverts, a later read of the same server, a read of another server)
CHANNELS = {
    "mcp": (
        make_call("delete_note", {"note_id": 1}, server="notes"),
        make_call("list_notes", server="notes"),
        make_call("get_current_time", server="time"),
    ),
    "http": (
        Call("http", "api.example.com", "DELETE", {"method": "DELETE", "path": "/v1/items/1"}, "s"),
        Call("http", "api.example.com", "GET", {"method": "GET", "path": "/v1/items"}, "s"),
        Call("http", "status.example.com", "GET", {"method": "GET", "path": "/"}, "s"),
    ),
}


async def rehearsing(tmp_path, config_text="mode: rehearsal\n", **chain):
    engine, _ = await make_engine(tmp_path)
    engine.policies = build_policies(parse_config(config_text), **chain)
    engine.simulator = FakeSimulator()
    return engine


@pytest.mark.parametrize("channel", sorted(CHANNELS))
async def test_a_read_after_a_diversion_is_served_by_sim(tmp_path, channel):
    write, read, elsewhere = CHANNELS[channel]
    engine = await rehearsing(tmp_path)
    real, session = FakeReal(), Session("s")
    before = await engine.handle(read, session, real)
    assert before.record.decision.route is Route.REAL and real.calls == 1
    diverted = await engine.handle(write, session, real)
    assert (diverted.record.decision.route, diverted.record.decision.policy, diverted.record.decision.safety) == (
        Route.SIM,
        "rehearsal",
        "destructive",
    )
    after = await engine.handle(read, session, real)
    decision = after.record.decision
    assert (decision.route, decision.policy, decision.safety) == (Route.SIM, "rehearsal", "safe"), decision.reason
    assert "diverted to sim earlier in rehearsal" in decision.reason
    assert after.observation.provenance is Provenance.SIM and real.calls == 1  # the real side saw only the first read
    # Another server of the session, and the same server in another session, stay real.
    assert (await engine.handle(elsewhere, session, real)).record.decision.route is Route.REAL
    other = Call(read.channel, read.server, read.tool, read.arguments, "other")
    assert (await engine.handle(other, Session("other"), real)).record.decision.route is Route.REAL
    assert real.calls == 3


def broken_catalog(server, tool):
    raise RuntimeError("tool catalog broke")


@pytest.mark.parametrize("on_divert", ["sim", "deny"])
async def test_a_call_whose_classification_raises_never_reaches_the_real_side(tmp_path, on_divert):
    """The MCP classifier reads annotations through the tool catalog the router built;
    when that raises, the call is `unknown` and rehearsal keeps it away from real,
    even a call whose name says it only reads."""
    engine = await rehearsing(
        tmp_path, f"mode: rehearsal\nrehearsal: {{on_divert: {on_divert}}}\n", tools_meta=broken_catalog
    )
    real = FakeReal()
    outcome = await engine.handle(make_call("list_notes", server="notes"), Session("s"), real)
    decision = outcome.record.decision
    assert (decision.route, decision.policy, decision.safety) == (Route(on_divert), "rehearsal", "unknown")
    assert (
        "fails closed" in decision.reason
        and "classification failed: RuntimeError: tool catalog broke" in decision.safety_reason
    )
    assert real.calls == 0 and outcome.observation.provenance is not Provenance.REAL
    # Outside rehearsal the same failure is recorded as unknown, and routing goes on.
    engine.policies = build_policies(parse_config("mode: real\n"), tools_meta=broken_catalog)
    outside = await engine.handle(make_call("list_notes", server="notes", session="s2"), Session("s2"), real)
    assert (outside.record.decision.route, outside.record.decision.safety) == (
        Route.REAL,
        "unknown",
    ) and real.calls == 1


async def test_mode_learned_with_rehearsal_diverts_destructive_calls(tmp_path):
    engine = await rehearsing(tmp_path, "mode: learned\nrehearsal: {enabled: true}\nlearned: {explore_rate: 0}\n")
    real, session = FakeReal(), Session("s")
    read = await engine.handle(make_call("list_notes", server="notes"), session, real)
    # No model, no labels: real.
    assert (read.record.decision.route, read.record.decision.policy) == (
        Route.REAL,
        "learned",
    )
    diverted = await engine.handle(make_call("delete_note", {"note_id": 1}, server="notes"), session, real)
    assert (diverted.record.decision.route, diverted.record.decision.policy, diverted.record.decision.safety) == (
        Route.SIM,
        "rehearsal",
        "destructive",
    )
    assert diverted.observation.provenance is Provenance.SIM and real.calls == 1
    later = await engine.handle(make_call("list_notes", server="notes"), session, real)
    assert (later.record.decision.route, later.record.decision.policy) == (Route.SIM, "rehearsal") and real.calls == 1
