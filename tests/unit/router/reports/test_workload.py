"""The one decision procedure reports use: recorded sessions decided again call by call,
replay served as live replay serves it (a miss goes real and counts as real), calls
counted whatever answered them, and the reasons calls stayed real."""

from __future__ import annotations

from kit.learned import row

from calls import Mode
from policies.chain import default_policies
from policies.learned import LearnedSettings
from policies.safety import SafetyClassifier
from router.engine.replay_modes import ReplayModes
from router.reports.workload import ExplainedPolicy, recorded_workload, run_workload


def kit_key(call) -> str:
    return f"{call.server}/{call.tool}/{sorted(call.arguments.items())}"


def session(n: int, name: str, start: int, *, calls: int, provenance: str = "real") -> list[dict]:
    """`calls` reads of a constant in one session (occurrences 1..calls)."""
    out = []
    for occurrence in range(1, calls + 1):
        record = row(
            start + occurrence,
            tool="get_motto",
            arguments={},
            real="carpe diem",
            sim=None,
            divergence=None,
            kind=None,
            session=name,
            step=occurrence,
            ts=float(start + occurrence),
        )
        record["occurrence"], record["provenance"] = occurrence, provenance
        record["observation"]["provenance"] = provenance
        out.append(record)
    return out


def decided(rows, **modes):
    learned = ExplainedPolicy(LearnedSettings(explore_rate=0.0), replay_key_of=kit_key)
    chain = default_policies(rules=[], mode=Mode.LEARNED, classifier=SafetyClassifier(), learned=learned)
    calls = recorded_workload(rows, max_divergence=0.2, prior_strength=4.0, sessions={"s3"})
    return run_workload(
        calls,
        chain,
        learned=learned,
        modes=ReplayModes(**modes),
        max_divergence=0.2,
        real_price=lambda s, t: 1.0,
        sim_price=0.1,
        latency_weight=0.0,
    )


def test_a_replay_past_the_sources_recording_is_a_miss_that_goes_real_and_counts_real():
    # s1 and s2 read the motto once each; s3 reads it twice: replay serves its first read
    # from s2, and s2 has no second occurrence.
    report = decided([*session(1, "s1", 0, calls=1), *session(2, "s2", 10, calls=1), *session(3, "s3", 20, calls=2)])
    assert report.calls == 2 and report.sessions == 1
    assert report.decided == {"replay": 2} and report.served == {"replay": 1, "real": 1} and report.replay_misses == 1
    assert report.off_real_share == 0.5 and report.fidelity == 1.0 and report.wrong == 0
    [(why, count)] = report.why_real.items()
    assert count == 1 and why.startswith("replay missed (the source session made this call fewer than 2 times)")


def test_a_miss_under_record_mode_none_is_an_error_not_a_real_answer():
    report = decided(
        [*session(1, "s1", 0, calls=1), *session(2, "s2", 10, calls=1), *session(3, "s3", 20, calls=2)],
        record_mode="none",
    )
    assert report.served == {"replay": 1, "none": 1} and report.off_real_share == 0.5


def test_the_state_is_what_was_known_when_the_session_started():
    # Without s2 before it, s3 has one agreeing session at most: nothing replays.
    report = decided([*session(1, "s1", 0, calls=1), *session(3, "s3", 20, calls=2), *session(2, "s2", 30, calls=1)])
    assert report.served == {"real": 2} and report.off_real_share == 0.0


def test_calls_recorded_without_a_real_answer_are_decided_and_counted_unscored():
    rows = [
        *session(1, "s1", 0, calls=1),
        *session(2, "s2", 10, calls=1),
        *session(3, "s3", 20, calls=1, provenance="replay"),
    ]
    report = decided(rows)
    assert report.calls == 1 and report.served == {"replay": 1} and report.unscored == 1 and report.scored == 0
