"""LearnedPolicy decisions: cold start, guards, exploration, rules with route: learned."""

from __future__ import annotations

from kit.calls import make_call
from kit.learned import generate

from calls import Call, Decision, Mode, Route, Session
from policies.chain import default_policies
from policies.learned import LearnedPolicy, LearnedSettings, StateBuilder, after_call
from policies.rules import parse_rule
from policies.safety.verdict import SafetyClass, SafetyVerdict

SAFE = SafetyVerdict(SafetyClass.SAFE, "tool name says 'get'")
SIDE = SafetyVerdict(SafetyClass.SIDE_EFFECT, "not known to be read-only")


def kit_key(call: Call) -> str:  # the replay key kit.learned gives its records
    return f"{call.server}/{call.tool}/{sorted(call.arguments.items())}"


def policy_after(rows, **settings) -> LearnedPolicy:
    builder = StateBuilder(max_divergence=0.2)
    builder.add(rows)
    return LearnedPolicy(LearnedSettings(explore_rate=0.0, **settings), replay_key_of=kit_key, state=builder.snapshot())


def motto(session: str = "a") -> Call:
    return make_call("get_motto", session=session)


def visits(session: str = "a") -> Call:
    return make_call("get_visits", session=session)


def only(tool: str, rows, n: int, *, faithful_sim: bool) -> list[dict]:
    picked = [r for r in rows if r["tool"] == tool][:n]
    for r in picked:  # a clean signal: every shadow comparison agrees with faithful_sim
        r["divergence"], r["divergence_kind"] = (0.0, "none") if faithful_sim else (0.9, "content")
    return picked


def test_cold_start_switches_a_faithful_tool_after_enough_labels_and_keeps_an_unfaithful_one_real():
    rows = generate(600)
    few = only("get_motto", rows, 4, faithful_sim=True) + only("get_visits", rows, 4, faithful_sim=False)
    early = policy_after(few, replay_min_sessions=0)  # the estimates alone (the evidence rule: below)
    assert early.decide(motto(), Session("a"), SAFE).route is Route.REAL
    assert "per-tool estimate, 4 labels" in early.decide(motto(), Session("a"), SAFE).reason

    many = only("get_motto", rows, 40, faithful_sim=True) + only("get_visits", rows, 40, faithful_sim=False)
    later = policy_after(many, replay_min_sessions=0)
    decided = later.decide(motto(), Session("a"), SAFE)
    # Replay (price 0) beats sim (price 0.1) once both are trusted.
    assert decided.route is Route.REPLAY and decided.policy == "learned", decided.reason
    assert "replay: P(ok)=" in decided.reason and ">= 0.900" in decided.reason
    counter = later.decide(visits(), Session("a"), SAFE)
    assert counter.route is Route.REAL, counter.reason


def test_sim_when_there_is_no_recording_of_the_call():
    rows = only("get_motto", generate(600), 40, faithful_sim=True)
    policy = policy_after(rows)
    other = make_call("get_motto", {"lang": "la"}, session="a")  # never recorded: no replay
    decided = policy.decide(other, Session("a"), SAFE)
    assert decided.route is Route.SIM and "replay: no real recording" in decided.reason


def test_side_effect_calls_stay_real_and_replay_is_stale_after_one():
    policy = policy_after(only("get_motto", generate(600), 40, faithful_sim=True))
    session = Session("a")
    assert policy.decide(make_call("get_motto", session="a"), session, SIDE).route is Route.REAL
    after_call(session, make_call("add_motto", session="a"), Decision(Route.REAL, "learned", "", safety="side_effect"))
    decided = policy.decide(motto(), session, SAFE)
    assert decided.route is Route.SIM and "after a real call with side effects ('add_motto' on 'srv')" in decided.reason
    # Another server's side effects do not matter.
    fresh = Session("b")
    after_call(
        fresh, make_call("add", server="other", session="b"), Decision(Route.REAL, "learned", "", safety="side_effect")
    )
    assert policy.decide(motto("b"), fresh, SAFE).route is Route.REPLAY


def test_exploration_shadows_a_share_of_calls():
    policy = policy_after(
        only("get_visits", generate(600), 40, faithful_sim=False),
    )
    policy.settings = LearnedSettings(explore_rate=0.2)
    routes = [policy.decide(visits(f"s{i}"), Session(f"s{i}", steps=i), SAFE).route for i in range(2000)]
    share = routes.count(Route.SHADOW) / len(routes)
    assert 0.15 < share < 0.25 and set(routes) == {Route.REAL, Route.SHADOW}


def test_stateful_channels_are_pinned_at_the_first_call():
    builder = StateBuilder(max_divergence=0.2)
    learned = LearnedPolicy(LearnedSettings(explore_rate=0.0), state=builder.snapshot())
    chain = default_policies(rules=[], mode=Mode.LEARNED, learned=learned)
    from policies.base import decide

    session = Session("a")
    shell = make_call("shell_exec", {"command": "ls"}, channel="shell", session="a")
    first = decide(chain, shell, session, fallback=Decision(Route.REAL, "x", ""))
    assert first.policy == "learned" and first.route is Route.REAL
    assert decide(chain, shell, session, fallback=Decision(Route.REAL, "x", "")).policy == "sticky"


def test_a_rule_can_hand_calls_to_the_learned_router():
    policy = policy_after(only("get_motto", generate(600), 40, faithful_sim=True))
    chain = default_policies(
        rules=[parse_rule({"name": "mottos", "match": {"tool": "get_motto"}, "route": "learned", "deadline_s": 5})],
        mode=Mode.REAL,
        learned=policy,
    )
    from policies.base import decide

    decided = decide(chain, motto(), Session("a"), fallback=Decision(Route.REAL, "x", ""))
    assert (
        decided.route is Route.REPLAY and decided.policy == "learned" and decided.reason.startswith("rules:mottos -> ")
    )
    assert decided.deadline_s == 5 and decided.safety == "safe"
    other = decide(chain, visits(), Session("a"), fallback=Decision(Route.REAL, "x", ""))
    assert other.policy == "mode"
