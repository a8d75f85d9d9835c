"""The engine keeps the facts a session's answers state (what the world model is told
back), not those of simroute's own answers, within the configured limit."""

from kit.calls import make_call
from kit.engine import FakeReal, FakeSimulator, make_engine

from backends.world_model.facts import StatedFacts
from calls import Route, Session
from policies.chain import default_policies
from router.addons.stated_facts import FactKeeper


async def test_answers_state_facts_into_the_session_and_simroute_s_own_answers_do_not(tmp_path):
    engine, _ = await make_engine(tmp_path, mode=Route.SIM)
    engine.simulator = FakeSimulator('{"id": 7, "name": "Ada Park"}')
    engine.addons.add(FactKeeper(engine.session_state, limit=2))
    session = Session("s")
    await engine.handle(make_call("get_user", {"id": 7}), session, FakeReal())
    assert session.slice(StatedFacts).facts == {"srv id=7": (0, "name=Ada Park")}
    engine.simulator = FakeSimulator('{"id": 8, "name": "Bo"}')
    await engine.handle(make_call("get_user", {"id": 8}), session, FakeReal())
    engine.simulator = FakeSimulator('{"id": 9, "name": "Cy"}')
    await engine.handle(make_call("get_user", {"id": 9}), session, FakeReal())
    assert list(session.slice(StatedFacts).facts) == ["srv id=7", "srv id=8"]  # the limit: the oldest stay
    denied = Session("d")  # a denial is simroute's own answer: it states nothing
    engine.policies = default_policies(rules=[], mode=Route.DENY)
    await engine.handle(make_call("get_user", {"id": 1}), denied, FakeReal())
    assert denied.slice(StatedFacts).facts == {}


async def test_without_a_fact_keeper_no_facts_are_kept(tmp_path):
    engine, _ = await make_engine(tmp_path, mode=Route.SIM)
    engine.simulator = FakeSimulator('{"id": 7, "name": "Ada Park"}')
    session = Session("s")
    await engine.handle(make_call("get_user", {"id": 7}), session, FakeReal())
    assert session.slice(StatedFacts).facts == {}
