"""The learned router keeps token namespaces apart: a token's statistics, labels and
recorded keys come from its own records and the shared namespaces', never from
another token's."""

from __future__ import annotations

from kit.calls import make_call
from kit.learned import row

from calls import Call, Route, Session
from policies.learned import LearnedPolicy, LearnedSettings, StateBuilder
from policies.learned.features import ToolStats, tool_key
from policies.learned.tenancy import SHARED_ONLY, Tenancy, merged, namespace_of
from policies.safety.verdict import SafetyClass, SafetyVerdict

SAFE = SafetyVerdict(SafetyClass.SAFE, "declared read-only")
MOTTO = tool_key("mcp", "srv", "get_motto")


def replay_key(call: Call) -> str:
    """The kit's replay key in the call's token namespace (as ReplayBackend makes it)."""
    return f"{namespace_of(call.session_id)}srv/{call.tool}/{sorted(call.arguments.items())}"


def recordings(token: str, answer: str, *, sessions: int = 3, start: int = 0) -> list[dict]:
    """`sessions` sessions of `token`, each one real call of get_motto answered `answer`."""
    rows = []
    for s in range(sessions):
        n = start + s + 1
        record = row(
            n,
            tool="get_motto",
            arguments={},
            real=answer,
            sim=None,
            divergence=None,
            kind=None,
            session=f"{token}/s{n}",
            step=1,
            ts=1000.0 + n,
        )
        record["replay_key"] = record["call_key"] = f"{token}/" + record["replay_key"]
        rows.append(record)
    return rows


def policy_after(rows: list[dict], tenancy: Tenancy) -> LearnedPolicy:
    builder = StateBuilder(max_divergence=0.2, tenancy=tenancy)
    builder.add(rows)
    return LearnedPolicy(
        LearnedSettings(explore_rate=0.0, replay_min_sessions=2), replay_key_of=replay_key, state=builder.snapshot()
    )


def decide(policy: LearnedPolicy, session: str):
    return policy.assess(make_call("get_motto", session=session), Session(session), SAFE)


def test_one_tokens_agreeing_recordings_never_make_another_token_replay():
    policy = policy_after(recordings("alice", "carpe diem"), Tenancy(namespaced=True))
    alice, bob = decide(policy, "alice/next"), decide(policy, "bob/first")
    assert alice.route is Route.REPLAY and "agreed in" in alice.reason
    assert bob.route is Route.REAL
    assert "agreed" not in bob.reason and "0 labels" in bob.reason  # bob is shown no statistic of alice's
    assert set(policy.state.stats) == {"alice/" + MOTTO}
    assert not policy.state.recorded("bob/" + replay_key(make_call("get_motto")), "bob/first")


def test_without_tokens_every_session_shares_one_namespace():
    rows = recordings("alice", "carpe diem")
    for record in rows:
        record["session"] = record["session"].replace("alice/", "alice-")
        record["replay_key"] = record["call_key"] = record["replay_key"].removeprefix("alice/")
    policy = policy_after(rows, Tenancy())
    assert decide(policy, "bob-first").route is Route.REPLAY


def test_a_shared_namespace_counts_for_every_token_and_its_recording_is_replayable():
    """bob has no record of his own: the shared ci namespace's statistics and recording
    make him replay (he stayed real before); alice's disagreeing ones are not his."""
    tenancy = Tenancy(namespaced=True, shared=("ci",))
    rows = recordings("ci", "carpe diem") + recordings("alice", "tempus fugit", start=10)
    rows[-1]["observation"]["content"][0]["text"] = (
        "something else"  # alice's answers disagree: her replay never allowed
    )
    policy = policy_after(rows, tenancy)
    bob = decide(policy, "bob/first")
    assert bob.route is Route.REPLAY and "agreed in 3 sessions" in bob.reason
    assert policy.state.recorded("bob/srv/get_motto/[]", "bob/first")
    alice = decide(policy, "alice/next")
    # alice's view: her own labels (her first session scored against ci's recording, as
    # replay would have served it; her last disagrees) and ci's, counted together.
    assert alice.route is Route.REAL
    assert policy.state.stats["alice/" + MOTTO].replay_labels == 3 + 2
    assert policy.state.stats[SHARED_ONLY + MOTTO].replay_labels == 2


def test_a_replay_label_reads_the_shared_namespace_never_another_token():
    tenancy = Tenancy(namespaced=True, shared=("ci",))
    builder = StateBuilder(max_divergence=0.2, tenancy=tenancy)
    builder.add(recordings("ci", "carpe diem", sessions=1) + recordings("alice", "tempus fugit", sessions=1, start=10))
    bobs = recordings("bob", "carpe diem", sessions=1, start=20)[0]
    labels = builder.add_row(bobs)
    assert [label.route for label in labels] == ["replay"] and labels[0].acceptable  # compared with ci's answer
    daves = recordings("dave", "tempus fugit", sessions=1, start=30)[0]
    builder.labels.tenancy = Tenancy(namespaced=True)  # no shared namespace: alice's recording is not dave's
    assert builder.add_row(daves) == []


def test_merged_statistics_add_up():
    total = merged(
        [ToolStats(replay_labels=2, replay_ok=1, agreeing_sessions=2), ToolStats(replay_labels=3, replay_ok=3)]
    )
    assert (total.replay_labels, total.replay_ok, total.agreeing_sessions) == (5, 4, 2)
