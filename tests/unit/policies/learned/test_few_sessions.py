"""The learned router after a few sessions: the evidence rule, write effects scoped by
what they change, replay labels that score what replay would serve, and the prior."""

from __future__ import annotations

from kit.calls import make_call
from kit.learned import row

from calls import Call, Decision, Route, Session
from policies.learned import LearnedPolicy, LearnedSettings, StateBuilder, after_call
from policies.learned.prior import BetaPrior, fit_prior
from policies.learned.replay_sources import Missed, ReplaySources, Served
from policies.safety.verdict import SafetyClass, SafetyVerdict

SAFE = SafetyVerdict(SafetyClass.SAFE, "declared read-only")
SIDE = SafetyVerdict(SafetyClass.SIDE_EFFECT, "not known to be read-only")


def kit_key(call: Call) -> str:
    return f"{call.server}/{call.tool}/{sorted(call.arguments.items())}"


def sessions(count: int) -> list[dict]:
    """`count` sessions against one real counter service: each takes a ticket (a write),
    reads the counter, the constant version, and a page."""
    rows, ticket, n = [], 0, 0
    for s in range(count):
        ticket += 3  # other clients take tickets between sessions too
        for step, (tool, arguments, answer, safety) in enumerate(
            [
                ("next_ticket", {}, f"ticket {ticket}", "side_effect"),
                ("current_ticket", {}, f"current ticket {ticket}", "safe"),
                ("server_version", {}, "counter 2.4.1", "safe"),
                ("fetch", {"url": "http://127.0.0.1/page"}, "Hello from the page.", "safe"),
            ],
            start=1,
        ):
            n += 1
            record = row(
                n,
                tool=tool,
                arguments=arguments,
                real=answer,
                sim=None,
                divergence=None,
                kind=None,
                session=f"s{s}",
                step=step,
                ts=1000.0 + n,
            )
            record["safety_class"] = safety
            rows.append(record)
    return rows


def policy_after(rows, **settings) -> LearnedPolicy:
    builder = StateBuilder(max_divergence=0.2)
    builder.add(rows)
    return LearnedPolicy(LearnedSettings(explore_rate=0.0, **settings), replay_key_of=kit_key, state=builder.snapshot())


def fresh_session(policy: LearnedPolicy) -> dict[str, Decision]:
    session, out = Session("fresh"), {}
    for tool, arguments in [
        ("next_ticket", {}),
        ("server_version", {}),
        ("fetch", {"url": "http://127.0.0.1/page"}),
        ("current_ticket", {}),
    ]:
        call = make_call(tool, arguments, session="fresh")
        decision = policy.decide(call, session, SIDE if tool == "next_ticket" else SAFE)
        after_call(
            session,
            call,
            Decision(
                decision.route,
                decision.policy,
                decision.reason,
                safety="side_effect" if tool == "next_ticket" else "safe",
            ),
        )
        out[tool] = decision
    return out


def test_after_three_sessions_the_constant_and_the_page_replay_even_after_a_write_and_the_counter_stays_real():
    decided = fresh_session(policy_after(sessions(3)))
    assert decided["next_ticket"].route is Route.REAL
    for tool in ("server_version", "fetch"):
        assert decided[tool].route is Route.REPLAY, decided[tool].reason
        assert "answers agreed in 3 sessions and never differed" in decided[tool].reason
    assert decided["current_ticket"].route is Route.REAL
    assert "('next_ticket' on 'srv') in this session that may have changed it" in decided["current_ticket"].reason


def test_one_session_is_no_evidence_and_a_stricter_rule_waits_for_more():
    assert all(d.route is Route.REAL for d in fresh_session(policy_after(sessions(1))).values())
    strict = fresh_session(policy_after(sessions(3), replay_min_sessions=4))
    assert (
        strict["server_version"].route is Route.REAL
        and "per-tool estimate, 2 labels" in strict["server_version"].reason
    )


def test_a_write_with_no_evidence_blocks_its_whole_server():
    rows = [r for r in sessions(3) if r["tool"] != "next_ticket"]  # the reads never ran across a write
    policy = policy_after(rows)
    session = Session("fresh")
    after_call(session, make_call("reset", session="fresh"), Decision(Route.REAL, "learned", "", safety="side_effect"))
    decided = policy.decide(make_call("server_version", session="fresh"), session, SAFE)
    assert decided.route is Route.REAL and "('reset' on 'srv')" in decided.reason
    assert policy.state.independent == {}


def test_write_effects_learn_which_reads_a_write_leaves_alone():
    state = policy_after(sessions(3)).state
    assert state.independent == {
        "mcp\x1fsrv\x1fserver_version": frozenset({"mcp\x1fsrv\x1fnext_ticket"}),
        "mcp\x1fsrv\x1ffetch": frozenset({"mcp\x1fsrv\x1fnext_ticket"}),
    }


def test_replay_labels_compare_with_what_replay_serves_not_with_the_same_session():
    rows = sessions(1)
    repeat = dict(rows[2], id="f" * 16, ts=2000.0, step=5, occurrence=2)  # the same session reads the version again
    builder = StateBuilder(max_divergence=0.2)
    builder.add([*rows, repeat])
    stats = builder.snapshot().stats["mcp\x1fsrv\x1fserver_version"]
    assert stats.replay_labels == 0  # replay never serves a session its own recording
    builder.add(sessions(2)[4:])  # a second session
    stats = builder.snapshot().stats["mcp\x1fsrv\x1fserver_version"]
    assert stats.replay_labels == 1 and stats.replay_ok == 1 and stats.agreeing_sessions == 2


def test_replay_sources_serve_the_source_sessions_nth_occurrence():
    sources = ReplaySources()
    for n, (session, answer) in enumerate([("a", "one"), ("a", "two"), ("b", "three")], start=1):
        record = row(
            n,
            tool="t",
            arguments={},
            real=answer,
            sim=None,
            divergence=None,
            kind=None,
            session=session,
            step=n,
            ts=float(n),
        )
        record["occurrence"] = 1 if session == "b" else n
        from policies.learned.replay_sources import replayable

        sources.note(record, "k", replayable(record))
    served = sources.serve("k", "c", 1)
    assert isinstance(served, Served) and served.session == "b" and served.observation.content[0]["text"] == "three"
    missed = sources.serve("k", "c", 2)  # b, the newest session, made the call once
    assert isinstance(missed, Missed) and missed.has_source and "fewer than 2 times" in missed.reason
    first = sources.serve("k", "b", 2)  # b replays from a
    assert isinstance(first, Served) and first.observation.content[0]["text"] == "two"
    assert isinstance(sources.serve("other", "c", 1), Missed) and not sources.serve("other", "c", 1).has_source


def test_the_prior_lends_little_and_only_when_tools_of_a_kind_agree():
    assert fit_prior([(10, 0), (0, 10)], strength=4) == BetaPrior(1.0, 1.0)  # tools disagree: uniform
    agreeing = fit_prior([(10, 0), (9, 0), (12, 0)], strength=4)
    assert agreeing.a == 5.0 and agreeing.b == 1.0  # capped at 4 pseudo-labels
    assert agreeing.mean(0, 0) == 0.0  # a tool with no labels is never trusted
    assert BetaPrior().mean(11, 0) > 0.9 > BetaPrior().mean(5, 0)
