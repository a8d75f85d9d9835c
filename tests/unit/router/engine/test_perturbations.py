"""The engine's perturbation step: claimed call numbers, faults that reach no side,
changed answers kept beside what the agent saw, and nothing perturbed replayed."""

import json

from kit.calls import make_call, with_slices
from kit.engine import FakeReal, FakeSimulator, c, make_engine

from calls import Observation, Provenance, Route, Session
from policies.chain import default_policies
from policies.perturbation import PerturbationState, PlanConfig, compile_plan
from router.addons.perturbation.addon import Perturber
from router.engine.replay_modes import ReplayModes


def perturber(*rules, seed=7, default="p"):
    return Perturber(
        {"p": compile_plan("p", PlanConfig.model_validate({"seed": seed, "rules": list(rules)}))}, default=default
    )


async def test_an_error_on_the_real_route_is_answered_by_simroute_and_never_sent(tmp_path):
    engine, store = await make_engine(tmp_path)
    engine.addons.add(perturber({"name": "down", "kind": "error", "every": 2}))
    real, session = FakeReal(), Session("a")
    outcomes = [await engine.handle(c("a", i=i), session, real) for i in range(4)]
    assert real.calls == 2  # calls 2 and 4 never reached the real side
    faulted = outcomes[1]
    assert faulted.observation.is_error and faulted.observation.provenance is Provenance.NONE
    assert "Error executing tool tool: 503 Service Unavailable" in faulted.observation.text
    rows = await store.recent(session="a")
    assert [row["provenance"] for row in rows] == ["real", "none", "real", "none"]
    assert rows[1]["perturbation"] == {"kind": "error", "rule": "p:down", "seed": 7, "n": 2}
    assert "not sent to the real side" in rows[1]["note"] and "perturbation" not in rows[0]
    assert session.history[1].perturbed and not session.history[0].perturbed
    # The world model is told only what the environment saw: a fault never ran.
    assert session.history[1].not_run and not session.history[0].not_run
    environment = [turn for turn in session.history if turn.of_environment("mcp", "srv")]
    assert [turn.call.arguments for turn in environment] == [
        session.history[0].call.arguments,
        session.history[2].call.arguments,
    ]


async def test_a_truncated_answer_keeps_the_routes_own_answer_in_the_record(tmp_path):
    engine, store = await make_engine(tmp_path)
    engine.addons.add(perturber({"kind": "truncate", "keep": 0.5}))

    async def listing(call):
        return Observation(
            [{"type": "text", "text": json.dumps([1, 2, 3, 4])}], Provenance.REAL, structured={"items": [1, 2, 3, 4]}
        )

    session = Session("a")
    outcome = await engine.handle(c("a"), session, listing)
    assert session.history[0].perturbed and not session.history[0].not_run  # it ran: the environment saw it
    assert json.loads(outcome.observation.text) == [1, 2] and outcome.observation.structured == {"items": [1, 2]}
    assert outcome.observation.provenance is Provenance.NONE
    row = (await store.recent())[0]
    assert row["unperturbed"]["structured"] == {"items": [1, 2, 3, 4]} and row["observation"]["structured"] == {
        "items": [1, 2]
    }


async def test_latency_delays_the_call_and_leaves_its_answer_real(tmp_path):
    engine, store = await make_engine(tmp_path)
    engine.addons.add(perturber({"kind": "latency", "delay_s": 0.2}))
    import time

    started = time.perf_counter()
    outcome = await engine.handle(c("a"), Session("a"), FakeReal())
    assert time.perf_counter() - started >= 0.2
    assert outcome.observation.provenance is Provenance.REAL and outcome.record.perturbation["delay_s"] == 0.2


async def test_a_perturbed_answer_is_never_replayed(tmp_path):
    engine, store = await make_engine(tmp_path)
    engine.addons.add(perturber({"kind": "empty", "match": {"arguments": {"q": "x"}}}))
    recorded = Session("rec")
    await engine.handle(c("rec", q="x"), recorded, FakeReal())
    assert (await store.recent())[0]["provenance"] == "none"
    engine.addons.add(Perturber())
    engine.policies = default_policies(rules=[], mode=Route.REPLAY)
    engine.replay_modes = ReplayModes("new_episodes", "error")
    again = await engine.handle(c("b", q="x"), Session("b"), FakeReal())
    assert again.observation.provenance is not Provenance.REPLAY and "replay miss" in again.record.note


async def test_a_delayed_answer_keeps_its_provenance_and_is_not_replayed_either(tmp_path):
    engine, _ = await make_engine(tmp_path)
    engine.addons.add(perturber({"kind": "latency", "delay_s": 0.01}))
    delayed = await engine.handle(c("rec", q="y"), Session("rec"), FakeReal())
    assert delayed.observation.provenance is Provenance.REAL
    engine.addons.add(Perturber())
    engine.policies = default_policies(rules=[], mode=Route.REPLAY)
    engine.replay_modes = ReplayModes("new_episodes", "error")
    again = await engine.handle(c("b", q="y"), Session("b"), FakeReal())
    assert again.observation.is_error and "in the source was perturbed" in again.record.note


async def test_faults_on_the_sim_route_skip_the_model_and_a_rule_names_its_own_plan(tmp_path):
    engine, store = await make_engine(
        tmp_path, rules=[{"match": {"tool": "flaky"}, "route": "sim", "perturbation": "p"}]
    )
    engine.simulator = simulator = FakeSimulator()
    engine.addons.add(perturber({"kind": "rate_limit", "limit": 1}, default=None))
    session = Session("a")
    answers = [await engine.handle(make_call("flaky", session="a"), session, FakeReal()) for _ in range(3)]
    assert [a.observation.provenance for a in answers] == [Provenance.SIM, Provenance.NONE, Provenance.NONE]
    assert "Rate limit exceeded for flaky" in answers[1].observation.text and len(simulator.seen_history) == 1
    plain = await engine.handle(make_call("other", session="a"), session, FakeReal())
    assert plain.record.perturbation is None  # no rule named the plan, and no plan applies to every call


async def test_an_episode_plan_is_drawn_from_the_episode_seed(tmp_path):
    engine, _ = await make_engine(tmp_path)
    plan = compile_plan("episode", PlanConfig.model_validate({"rules": [{"kind": "error", "probability": 0.5}]}))

    async def kinds(seed):
        session = with_slices(Session(f"e{seed}-{id(object())}", seed=seed), PerturbationState(plan))
        return [(await engine.handle(c(session.id, i=i), session, FakeReal())).record.perturbation for i in range(30)]

    first = await kinds(3)
    assert first == await kinds(3) and first != await kinds(4)
    assert {p["seed"] for p in first if p} == {3}


async def test_a_denied_call_stays_a_denial(tmp_path):
    engine, store = await make_engine(tmp_path, rules=[{"match": {"tool": "drop"}, "route": "deny"}])
    engine.addons.add(perturber({"name": "all", "kind": "error"}))
    session = Session("a")
    denied = await engine.handle(make_call("drop", session="a"), session, FakeReal())
    assert "simroute denied this call" in denied.observation.text and denied.record.perturbation is None
    allowed = await engine.handle(make_call("read", session="a"), session, FakeReal())
    assert allowed.record.perturbation["n"] == 1  # the denial was not counted
