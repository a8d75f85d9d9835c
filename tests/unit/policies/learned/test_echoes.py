"""Replay across argument values a tool only echoes: learned from real answers, never
for an argument that changes the rest of the answer, never across token namespaces."""

from __future__ import annotations

from kit.calls import make_call
from kit.learned import row

from backends.replay import namespace_of
from calls import Call, Observation, Provenance, ReplayAlias, Route, Session
from policies.learned import LearnedPolicy, LearnedSettings, StateBuilder
from policies.safety.verdict import SafetyClass, SafetyVerdict
from shadow.compare.substitution import substituted

SAFE = SafetyVerdict(SafetyClass.SAFE, "declared read-only")


def namespaced_key(call: Call) -> str:  # as the router keys calls with tokens on
    return namespace_of(call.session_id) + f"{call.server}/{call.tool}/{sorted(call.arguments.items())}"


def sessions(count: int, namespace: str = "alice/") -> list[dict]:
    """Sessions in their own repositories: `workspace_info` echoes the path, `list_files`
    answers with the repository's contents (which differ)."""
    rows, n = [], 0
    for s in range(count):
        path = f"/tmp/repo-{s}"
        for step, (tool, answer) in enumerate(
            [
                ("workspace_info", f"workspace {path}: layout v2, default branch main"),
                ("list_files", f"{path}: README.md ({100 + s} bytes)"),
            ],
            start=1,
        ):
            n += 1
            session = f"{namespace}s{s}"
            call = Call("mcp", "srv", tool, {"path": path}, session)
            record = row(
                n,
                tool=tool,
                arguments={"path": path},
                real=answer,
                sim=None,
                divergence=None,
                kind=None,
                session=session,
                step=step,
                ts=1000.0 + n,
            )
            record["replay_key"] = record["call_key"] = namespaced_key(call)
            rows.append(record)
    return rows


def policy_after(rows) -> LearnedPolicy:
    builder = StateBuilder(max_divergence=0.2)
    builder.add(rows)
    return LearnedPolicy(LearnedSettings(explore_rate=0.0), replay_key_of=namespaced_key, state=builder.snapshot())


def test_a_tool_that_echoes_its_path_replays_in_another_repository_with_the_path_substituted():
    policy = policy_after(sessions(3))
    call = make_call("workspace_info", {"path": "/tmp/elsewhere"}, session="alice/fresh")
    decided = policy.decide(call, Session("alice/fresh"), SAFE)
    assert decided.route is Route.REPLAY, decided.reason
    assert "recorded for another 'path', the value substituted" in decided.reason
    assert decided.replay_as == ReplayAlias(
        namespaced_key(make_call("workspace_info", {"path": "/tmp/repo-2"}, session="alice/s2")),
        "path",
        "/tmp/repo-2",
        "/tmp/elsewhere",
    )


def test_a_tool_whose_answer_depends_on_the_repository_does_not():
    policy = policy_after(sessions(3))
    decided = policy.decide(
        make_call("list_files", {"path": "/tmp/elsewhere"}, session="alice/fresh"), Session("alice/fresh"), SAFE
    )
    assert (
        decided.route is Route.REAL
        and decided.replay_as is None
        and "replay: P(ok)=0.000 < 0.900 (per-tool estimate, 0 labels)" in decided.reason
    )
    assert ("mcp\x1fsrv\x1flist_files", "path") not in policy.state.echoes.generalised


def test_never_across_token_namespaces():
    policy = policy_after(sessions(3))
    decided = policy.decide(
        make_call("workspace_info", {"path": "/tmp/elsewhere"}, session="bob/fresh"), Session("bob/fresh"), SAFE
    )
    assert decided.route is Route.REAL and decided.replay_as is None


def test_labels_score_the_substituted_answer_so_the_evidence_rule_counts_those_sessions():
    stats = policy_after(sessions(3)).state.stats["mcp\x1fsrv\x1fworkspace_info"]
    # Session 2 vs session 1's answer.
    assert stats.replay_labels == 1 and stats.replay_ok == 1 and stats.agreeing_sessions == 2
    assert policy_after(sessions(3)).state.stats["mcp\x1fsrv\x1flist_files"].replay_labels == 0


def test_substitution_replaces_every_occurrence_in_content_and_structure():
    recorded = Observation(
        [{"type": "text", "text": "at /tmp/a and /tmp/a/x"}],
        Provenance.REAL,
        structured={"root": "/tmp/a", "n": 2, "a": "/tmp/ab"},
    )
    out = substituted(recorded, "/tmp/a", '/tmp/"b"')
    assert out.content[0]["text"] == 'at /tmp/"b" and /tmp/"b"/x' and out.structured == {
        "root": '/tmp/"b"',
        "n": 2,
        "a": '/tmp/"b"b',
    }
