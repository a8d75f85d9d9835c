"""Perturbation plans: a pure, seeded decision per (seed, session key, rule, call number)."""

import pytest
from kit.calls import make_call
from pydantic import ValidationError

from policies.perturbation import PerturbationsConfig, PlanConfig, compile_plan


def plan_of(*rules, seed=7, per_session=False, name="p"):
    return compile_plan(
        name, PlanConfig.model_validate({"seed": seed, "per_session": per_session, "rules": list(rules)})
    )


def run(plan, calls=200, *, seed=None, key="", call=None):
    """The kinds decided for `calls` successive matching calls of one session ("-": none)."""
    call = call or make_call("search")
    matched = plan.matching(call)
    out = []
    for n in range(1, calls + 1):
        found = plan.decide(
            [(rule, n) for rule, _ in matched], seed=plan.seed if seed is None else seed, key=key, step=n - 1
        )
        out.append(found.kind if found is not None else "-")
    return out


def test_a_30_percent_error_rate_is_the_same_sequence_twice_within_binomial_bounds_and_another_seed_differs():
    rule = {"kind": "error", "probability": 0.3, "match": {"tool": "search*"}}
    first, second = run(plan_of(rule)), run(plan_of(rule))
    assert first == second
    assert 40 <= first.count("error") <= 80
    other = run(plan_of(rule, seed=8))
    assert other != first and 40 <= other.count("error") <= 80


def test_rate_limit_answers_once_the_bucket_is_spent_and_a_window_refills_it():
    never = run(plan_of({"kind": "rate_limit", "limit": 3}), calls=6)
    assert never == ["-", "-", "-", "rate_limit", "rate_limit", "rate_limit"]
    windowed = run(plan_of({"kind": "rate_limit", "limit": 2, "window": 4}), calls=8)
    assert windowed == ["-", "-", "rate_limit", "rate_limit"] * 2


def test_after_calls_every_and_at_steps_all_hold_before_a_rule_fires():
    assert run(plan_of({"kind": "error", "after_calls": 2, "every": 2}), calls=8) == [
        "-",
        "-",
        "-",
        "error",
        "-",
        "error",
        "-",
        "error",
    ]
    assert run(plan_of({"kind": "timeout", "at_steps": [1, 4]}), calls=6) == ["-", "timeout", "-", "-", "timeout", "-"]


def test_only_calls_the_match_fits_and_the_first_rule_that_fires_wins():
    plan = plan_of(
        {"name": "writes", "kind": "error", "match": {"tool": "write_*"}},
        {"name": "slow", "kind": "latency", "delay_s": 0.25},
    )
    write, read = make_call("write_file"), make_call("read_file")
    assert [rule.name for rule, _ in plan.matching(write)] == ["writes", "slow"]
    assert [rule.name for rule, _ in plan.matching(read)] == ["slow"]
    decided = plan.decide([(rule, 1) for rule, _ in plan.matching(write)], seed=7, key="", step=0)
    assert decided is not None and decided.kind == "error" and decided.rule == "p:writes" and decided.status == 503
    assert decided.meta() == {"kind": "error", "rule": "p:writes", "seed": 7, "n": 1}
    slow = plan.decide([(rule, 1) for rule, _ in plan.matching(read)], seed=7, key="", step=0)
    assert slow is not None and slow.kind == "latency" and slow.delay_s == 0.25


def test_the_safety_match_key_reads_the_gates_class():
    plan = plan_of({"kind": "error", "match": {"safety": ["side_effect", "destructive"]}})
    assert plan.needs_safety
    assert len(plan.matching(make_call("write"), "side_effect")) == 1
    assert plan.matching(make_call("read"), "safe") == [] and plan.matching(make_call("read"), None) == []


def test_a_tool_scoped_rule_counts_each_tool_apart_and_a_session_scoped_one_counts_the_session():
    plan = plan_of({"name": "t", "kind": "error", "scope": "tool"}, {"name": "s", "kind": "error"})
    counters = {rule.name: counter for rule, counter in plan.matching(make_call("a", server="x"))}
    other = {rule.name: counter for rule, counter in plan.matching(make_call("b", server="x"))}
    assert counters["t"] != other["t"] and counters["s"] == other["s"]


def test_delays_drawn_from_a_distribution_are_seeded_and_in_range():
    rule = {"kind": "latency", "delay_s": {"distribution": "uniform", "low_s": 0.1, "high_s": 0.3}}
    plan = plan_of(rule)
    [(matched, _)] = plan.matching(make_call())
    delays = [plan.decide([(matched, n)], seed=1, key="", step=n).delay_s for n in range(1, 50)]
    assert all(0.1 <= d <= 0.3 for d in delays) and len(set(delays)) > 40
    assert delays == [plan.decide([(matched, n)], seed=1, key="", step=n).delay_s for n in range(1, 50)]
    lognormal = plan_of({"kind": "latency", "delay_s": {"distribution": "lognormal", "median_s": 0.2, "sigma": 0.5}})
    [(matched, _)] = lognormal.matching(make_call())
    drawn = sorted(lognormal.decide([(matched, n)], seed=1, key="", step=n).delay_s for n in range(1, 401))
    assert 0.15 < drawn[200] < 0.27  # the median


def test_an_episode_seed_replaces_the_plan_seed_and_per_session_keys_draw_per_session():
    plan = plan_of({"kind": "error", "probability": 0.5}, per_session=True)
    assert plan.key("sess-1", None) == (7, "sess-1")
    assert plan.key("sess-1", 99) == (99, "")  # an episode: its seed alone, so a rerun with that seed matches
    assert run(plan, key="sess-1") != run(plan, key="sess-2")
    assert run(plan_of({"kind": "error", "probability": 0.5}), seed=99) == run(plan, seed=99)


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ({"kind": "latency"}, "needs delay_s"),
        ({"kind": "rate_limit"}, "needs limit"),
        ({"kind": "rate_limit", "limit": 5, "window": 5}, "longer than limit"),
        ({"kind": "error", "match": {"tool": "re:("}}, "invalid regular expression"),
        ({"kind": "error", "match": {"colour": "red"}}, "unknown match key"),
        ({"kind": "explode"}, "Input should be"),
        ({"kind": "error", "probability": 1.5}, "less than or equal to 1"),
    ],
)
def test_a_bad_rule_is_a_clear_error(rule, problem):
    with pytest.raises(ValidationError, match=problem):
        PlanConfig.model_validate({"rules": [rule]})


def test_apply_names_a_defined_plan_and_rule_names_are_unique():
    with pytest.raises(ValidationError, match="'nope' is not one of the plans"):
        PerturbationsConfig.model_validate({"plans": {"p": {}}, "apply": "nope"})
    with pytest.raises(ValidationError, match="two rules are named 'x'"):
        PlanConfig.model_validate({"rules": [{"name": "x", "kind": "error"}, {"name": "x", "kind": "empty"}]})
