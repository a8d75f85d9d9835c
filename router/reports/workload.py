"""Recorded sessions decided again, call by call, the way the live router decides.

`simroute eval`, `simroute train`'s curve and threshold, and the benchmarks all
predict the router from this one procedure, so what a report promises is what
the router then delivers:

- each session starts from a fresh session state (no pins, no side-effect
  marks) and its calls are decided in order by the config's own policy chain
  (`policies.base.decide`), with the engine's after-call hooks between them;
- the learned router sees the state a router started at the session's first
  call would have had: statistics, evidence and recordings from the records
  before it (`learned.freeze` makes a live router do exactly that);
- a replay decision is served what live replay would serve (the source
  session's n-th occurrence, policies/learned/replay_sources.py); a miss is
  handled as `replay.record_mode` / `replay.on_miss` handle it live (by default
  it goes real, and counts as real);
- the truth is the call's recorded real answer. A replay is scored against it;
  a simulation with the call's shadow divergence when it was shadowed; a real
  call is faithful. A call recorded without a real answer (it was replayed or
  simulated when it ran) is decided all the same and counted, unscored when it
  goes off the real side: so `eval` of a learned session predicts its own share.

The report counts calls, not labels, and says why each call that stayed real did.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from calls import Call, Decision, Route, Session
from policies import rehearsal
from policies.base import decide
from policies.learned import LearnedPolicy, LearnedState, StateBuilder, after_call
from policies.learned.features import tool_key
from policies.learned.labels import acceptable, is_real_answer
from policies.learned.policy import Assessment
from policies.learned.replay_sources import Missed, Served
from policies.learned.tenancy import NO_TOKENS, Tenancy
from router.engine.replay_modes import ReplayModes

_FALLBACK = Decision(Route.REAL, "default", "no policy answered")
_LABEL_COUNT = re.compile(r", \d+ labels?$")


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One call of the workload with what is known about it."""

    call: Call
    step: int
    replay_key: str
    state: LearnedState | None  # what a router started at the session's first call knew
    # What replay would serve: a miss, the served answer's divergence from the truth, or
    # None when it serves an answer but the call has no real answer to score it against.
    replay: Missed | float | None
    replay_kind: str
    sim: float | None  # the call's shadow divergence (None: not shadowed)
    sim_kind: str
    real_latency_s: float


@dataclass(slots=True)
class WorkloadReport:
    calls: int = 0
    decided: Counter = field(default_factory=Counter)  # route decided
    served: Counter = field(default_factory=Counter)  # what answered: real, sim, replay, none
    divergence: float = 0.0  # sum over scored calls (real calls count 0)
    scored: int = 0
    unscored: int = 0  # sent to sim without a shadow comparison to score it
    wrong: int = 0  # served off real with an unacceptable divergence from the truth
    replay_misses: int = 0
    cost_saved: float = 0.0
    why_real: Counter = field(default_factory=Counter)
    sessions: int = 0
    model: str | None = None

    @property
    def off_real(self) -> int:
        return self.served["sim"] + self.served["replay"]

    @property
    def off_real_share(self) -> float:
        return self.off_real / self.calls if self.calls else 0.0

    @property
    def fidelity(self) -> float:
        return 1.0 - self.divergence / self.scored if self.scored else 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "sessions": self.sessions,
            "off_real": self.off_real,
            "off_real_share": round(self.off_real_share, 4),
            "routes": {str(k): v for k, v in sorted(self.decided.items())},
            "served": dict(sorted(self.served.items())),
            "fidelity": round(self.fidelity, 4),
            "scored": self.scored,
            "unscored": self.unscored,
            "wrong": self.wrong,
            "replay_misses": self.replay_misses,
            "real_calls_saved": self.off_real + self.served["none"],
            "cost_saved": round(self.cost_saved, 4),
            "why_real": dict(self.why_real.most_common()),
            "model": self.model,
        }


def recorded_workload(
    rows: Iterable[dict[str, Any]],
    *,
    max_divergence: float,
    prior_strength: float,
    sessions: set[str] | None = None,
    tenancy: Tenancy = NO_TOKENS,
) -> list[RecordedCall]:
    """The calls of `sessions` (default: every session) that got a real answer, in
    time order, each with what replay would serve it and the learned state at its
    session's start. One pass over `rows`; every row feeds the statistics."""
    builder = StateBuilder(max_divergence=max_divergence, prior_strength=prior_strength, tenancy=tenancy)
    started: dict[str, LearnedState] = {}
    out: list[RecordedCall] = []
    for row in sorted(rows, key=lambda r: (r["ts"], r["id"])):
        session = row["session"]
        wanted = (sessions is None or session in sessions) and row.get("status") == "complete"
        if not wanted:
            builder.add_row(row)
            continue
        state = started.get(session)
        if state is None:
            state = started[session] = builder.snapshot()
        key = row.get("replay_key") or row.get("call_key") or ""
        served = builder.labels.serve(
            row, tenancy.own(session) + tool_key(row["channel"], row["server"], row["tool"]), key
        )
        labels = {label.route: label for label in builder.add_row(row)}
        replay, sim = labels.get("replay"), labels.get("sim")
        out.append(
            RecordedCall(
                Call(row["channel"], row["server"], row["tool"], row.get("arguments") or {}, session),
                int(row.get("step") or 0),
                key,
                state,
                _replay_outcome(served, replay, truth=is_real_answer(row)),
                replay.kind if replay is not None else "",
                sim.divergence if sim is not None else None,
                sim.kind if sim is not None else "",
                float(row.get("latency_ms") or 0.0) / 1000,
            )
        )
    return out


def _replay_outcome(served: Served | Missed, label, *, truth: bool) -> Missed | float | None:
    if isinstance(served, Missed):
        return served
    return label.divergence if truth and label is not None else None


class ExplainedPolicy(LearnedPolicy):
    """The learned router, keeping its last assessment so a report can say why a
    call stayed real. Decides exactly as `LearnedPolicy` does."""

    last: Assessment | None = None

    def assess(self, call, session, safety=None) -> Assessment:
        self.last = super().assess(call, session, safety)
        return self.last


def run_workload(
    calls: Sequence[RecordedCall],
    policies: list,
    *,
    learned: ExplainedPolicy | None,
    modes: ReplayModes,
    max_divergence: float,
    real_price,
    sim_price: float,
    latency_weight: float,
) -> WorkloadReport:
    """Decide `calls` with the chain `policies` (whose learned router is `learned`)."""
    report = WorkloadReport(model=learned.model.digest if learned is not None and learned.model is not None else None)
    sessions: dict[str, Session] = {}
    for recorded in calls:
        call = recorded.call
        if learned is not None and recorded.state is not None:
            learned.state = recorded.state
            learned.last = None
        session = sessions.get(call.session_id)
        if session is None:
            session = sessions[call.session_id] = Session(call.session_id)
        session.steps = recorded.step
        decision = decide(policies, call, session, fallback=_FALLBACK)
        served, divergence, kind, why = _serve(recorded, decision, modes, learned)
        rehearsal.after_call(session, call, decision)
        after_call(session, call, decision)
        report.calls += 1
        report.decided[str(decision.route)] += 1
        report.served[served] += 1
        real_cost = real_price(call.server, call.tool) + latency_weight * recorded.real_latency_s
        if served == "real":
            report.scored += 1
            report.why_real[why] += 1
            if decision.route is Route.REPLAY:
                report.replay_misses += 1
            continue
        if served == "none":
            report.cost_saved += real_cost
            continue
        report.cost_saved += real_cost - (sim_price if served == "sim" else 0.0)
        if divergence is None:
            report.unscored += 1
            continue
        report.scored += 1
        report.divergence += divergence
        report.wrong += not acceptable(divergence, kind, max_divergence=max_divergence)
    report.sessions = len(sessions)
    return report


def _serve(recorded: RecordedCall, decision: Decision, modes: ReplayModes, learned: ExplainedPolicy | None):
    """(what answered, its divergence from the truth or None, its kind, why it stayed real)."""
    route = decision.route
    if route is Route.REPLAY:
        if not isinstance(recorded.replay, Missed):
            return "replay", recorded.replay, recorded.replay_kind, ""
        action = modes.on_miss_for(recorded.replay)
        why = f"replay missed ({recorded.replay.reason}); {modes.describe_miss_policy()}: {action}"
        if action == "real":
            return "real", 0.0, "none", why
        if action == "error":
            return "none", None, "", why
        route = Route.SIM
    if route is Route.SIM:
        return "sim", recorded.sim, recorded.sim_kind, ""
    if route is Route.DENY:
        return "none", None, "", ""
    return "real", 0.0, "none", _why_real(decision, learned)


def _why_real(decision: Decision, learned: ExplainedPolicy | None) -> str:
    if decision.policy != "learned" or learned is None or learned.last is None:
        return f"decided by {decision.policy}"
    if "explored" in decision.reason:
        return "explored (learned.explore_rate)"
    assessment = learned.last
    if not assessment.candidates:
        return assessment.reason
    parts = []
    for candidate in assessment.candidates:
        if candidate.probability is None:
            parts.append(f"{candidate.route}: {candidate.source}")
        elif not candidate.eligible:
            parts.append(f"{candidate.route}: below its threshold ({_LABEL_COUNT.sub('', candidate.source)})")
        else:
            parts.append(f"{candidate.route}: costs no less than real")
    return "; ".join(parts)
