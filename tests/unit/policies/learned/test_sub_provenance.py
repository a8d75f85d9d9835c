"""The learned router per sub-provenance of the simulated side: a shell tool whose `cat`
is answered from the session's world state (faithful) and whose `python` is written by
the model (not) is routed per call, and an MCP tool whose model answers diverge stays
real. Per-tool statistics alone mix the two and keep the tool real."""

from __future__ import annotations

from dataclasses import replace

from calls import Call, Decision, Observation, Provenance, Route, Session, Source
from policies.learned import LearnedPolicy, LearnedSettings, StateBuilder
from policies.learned.features import call_features
from policies.learned.labels import labels_from_rows
from policies.safety.verdict import SafetyClass, SafetyVerdict
from records.record import Record

SAFE = SafetyVerdict(SafetyClass.SAFE, "reads only")


def shadowed(n: int, call: Call, sub: str, divergence: float) -> dict:
    """A shadow pair: the real answer served, the simulated side made as `sub` says."""
    return Record(
        call,
        Decision(Route.SHADOW, "mode", "", safety="safe"),
        Observation([{"type": "text", "text": "out"}], Provenance.REAL, latency_s=0.5),
        step=n % 10,
        call_key=f"k{n}",
        id=f"{n:032x}",
        ts=1_800_000_000.0 + n,
        shadow=Observation([{"type": "text", "text": "out"}], Provenance.SIM, latency_s=0.001, source=Source(sub=sub)),
        divergence=divergence,
        divergence_kind="none" if divergence == 0 else "content",
    ).to_json()


def shell(command: str, session: str = "s") -> Call:
    return Call("shell", "sh", "exec", {"command": command}, session)


def git_commit(session: str = "s") -> Call:
    return Call("mcp", "git", "git_commit", {"message": "fix"}, session)


def logs() -> list[dict]:
    """What the shadow logs say: state answers of `cat` exact, model answers of `python`
    and of `git_commit` far off."""
    rows = []
    for n in range(12):
        rows.append(shadowed(3 * n, shell("cat notes.txt", f"s{n}"), "state", 0.0))
        rows.append(shadowed(3 * n + 1, shell("python train.py", f"s{n}"), "model", 0.9))
        rows.append(shadowed(3 * n + 2, git_commit(f"s{n}"), "model", 0.9))
    return rows


def guess(call: Call, session: Session) -> str | None:
    """A stand-in for the runtime's guess (router/runtime/expected_sub.py): `cat` runs from state."""
    if call.channel != "shell":
        return None
    return "state" if call.arguments["command"].startswith("cat ") else "model+state"


def test_the_router_sends_state_answered_cat_to_sim_and_keeps_model_answered_calls_real():
    builder = StateBuilder(max_divergence=0.2)
    builder.add(logs())
    policy = LearnedPolicy(LearnedSettings(explore_rate=0.0), state=builder.snapshot(), expected_sub=guess)
    cat = policy.decide(shell("cat notes.txt"), Session("s"), SAFE)
    assert cat.route is Route.SIM and "per-tool estimate of state answers, 12 labels" in cat.reason, cat.reason
    python = policy.decide(shell("python train.py"), Session("s"), SAFE)
    assert python.route is Route.REAL, python.reason  # `model+state` has no label: the tool's own estimate (half wrong)
    commit = policy.decide(git_commit(), Session("s"), SAFE)
    # No hook for MCP: the tool's usual sub, `model`, whose labels say no.
    assert commit.route is Route.REAL and "per-tool estimate of model answers, 12 labels" in commit.reason, (
        commit.reason
    )

    # The per-tool statistics alone (what the router knew before sub-provenance) mix `cat` and `python`.
    per_tool = replace(builder.snapshot(), sub_stats={}, usual_subs={})
    mixed = LearnedPolicy(LearnedSettings(explore_rate=0.0), state=per_tool, expected_sub=guess).decide(
        shell("cat notes.txt"), Session("s"), SAFE
    )
    assert mixed.route is Route.REAL and "per-tool estimate, 24 labels" in mixed.reason, mixed.reason


def test_sim_labels_carry_their_sub_and_its_features_reach_the_classifier():
    labels = [label for label in labels_from_rows(logs()) if label.route == "sim"]
    assert {(label.facts.tool, label.facts.arguments.get("command"), label.sub) for label in labels} == {
        ("exec", "cat notes.txt", "state"),
        ("exec", "python train.py", "model"),
        ("git_commit", None, "model"),
    }
    last_cat = [label for label in labels if label.sub == "state"][-1]
    names = dict(call_features(last_cat.facts))
    assert names["sub=state"] == 1.0 and names["tool=sh/exec|sub=state"] == 1.0
    # As it stood before this label.
    assert names["sub=state|sim_ok_rate"] == 1.0 and "sub=model|sim_ok_rate" not in names
