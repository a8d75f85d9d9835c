"""Labels for the two candidate routes, read from shadow records.

- **sim**: a shadowed call (both sides recorded) is acceptable when its
  divergence is at most `max_divergence` and its kind is not `status` or
  `structure` (an error for a success, a missing key: never acceptable).
- **replay**: a real answer compared with the answer replay would have served
  instead: the n-th occurrence of the key in the source session, chosen as live
  replay chooses it (replay_sources.py). No such answer, no label. Compared with
  the built-in noise detectors only: noise *learned* from real-vs-real pairs
  would call a counter's changing value noise, and replaying a counter is
  exactly what must not look faithful. The sessions taking part in acceptable
  replay labels are counted per tool (`agreeing_sessions`): the evidence behind
  the rule "identical in N distinct sessions and never different".

A sim label carries the sub-provenance of its shadow side (`state`, `model`, …),
and per (tool, sub) statistics are kept beside the per-tool ones (subs.py).

Real calls not classed `safe` and the reads around them feed `WriteEffects`
(write_effects.py): which writes leave which reads unchanged.

With tokens on, all of it is kept per token namespace (tenancy.py): a token's
statistics and labels come from its own records, and a replay label looks for
a recording in the token's own namespace, then in the shared ones.

Rows are record JSON objects (`Record.to_json()`), from SQLite or Redis alike.
`LabelBuilder` is incremental: the router feeds it new records off the decision
path; `simroute train` feeds it everything at once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from calls import Observation
from policies.learned.echoes import EchoEvidence
from policies.learned.features import CallFacts, ToolStats, tool_key
from policies.learned.replay_sources import Missed, ReplaySources, Served, replayable
from policies.learned.subs import SubEvidence, named
from policies.learned.tenancy import NO_TOKENS, Tenancy
from policies.learned.write_effects import WriteEffects
from records.sub_provenance import shadow_sub
from shadow.compare.divergence import BUILTIN_NOISE, compare
from shadow.compare.substitution import substituted

UNACCEPTABLE_KINDS = frozenset({"status", "structure"})
ROUTES = ("sim", "replay")
MAX_RECORDED_KEYS = 100_000
MAX_AGREEING = 64  # sessions remembered per tool as agreeing (far more than any rule asks for)


@dataclass(frozen=True, slots=True)
class Label:
    route: str  # "sim" | "replay"
    acceptable: bool
    divergence: float
    kind: str
    facts: CallFacts
    replay_key: str
    ts: float
    record_id: str
    latency_s: float  # how long the candidate route's answer took (sim) or 0 (replay)
    sub: str | None = None  # the sim side's sub-provenance (`state`, `model`, …); None: not named, or replay


def acceptable(divergence: float, kind: str | None, *, max_divergence: float) -> bool:
    return divergence <= max_divergence and (kind or "none") not in UNACCEPTABLE_KINDS


def is_real_answer(row: dict[str, Any]) -> bool:
    return (
        row.get("provenance") == "real"
        and row.get("status", "complete") == "complete"
        and bool(row.get("observation"))
        and not row.get("perturbation")  # a perturbed answer (even only delayed) teaches nothing about the tool
    )


class LabelBuilder:
    """Turns records, in time order, into labels, keeping per-tool statistics and
    the set of replay keys that have a real recording."""

    def __init__(self, *, max_divergence: float = 0.2, tenancy: Tenancy = NO_TOKENS) -> None:
        self.max_divergence = max_divergence
        self.tenancy = tenancy
        self.stats: dict[str, ToolStats] = {}
        self.sources = ReplaySources()
        self.writes = WriteEffects()
        self.echoes = EchoEvidence()
        self.subs = SubEvidence()  # per (tool, sub): sim labels' statistics, simulated answers
        self.recorded_keys: set[str] = set()  # replay keys with a real answer
        self.recorded_version = 0  # changes whenever `recorded_keys` does
        self._agreeing: dict[str, set[str]] = {}  # tool key -> sessions in acceptable replay labels

    def add(self, row: dict[str, Any]) -> list[Label]:
        """The labels one record gives (none, sim, replay or both); it must come after
        every earlier record of its replay key."""
        if row.get("status", "complete") != "complete":
            # Not a label yet, but live replay numbers (and may serve) it already.
            self.sources.note(row, row.get("replay_key") or row.get("call_key") or "", replayable(row))
            return []
        if row.get("perturbation"):
            # What the agent saw was perturbed (even only delayed): no label, never a replay source.
            self.sources.note(row, row.get("replay_key") or row.get("call_key") or "", None)
            return []
        key = self.tenancy.own(row["session"]) + tool_key(row["channel"], row["server"], row["tool"])
        stats = self.stats.setdefault(key, ToolStats())
        # The facts as they were before this call: per-tool stats up to now.
        facts = CallFacts(
            row["channel"],
            row["server"],
            row["tool"],
            row.get("arguments") or {},
            row.get("safety_class"),
            int(row.get("step") or 0),
            replace(stats),
        )
        out: list[Label] = []
        replay_key = row.get("replay_key") or row.get("call_key") or ""
        if row.get("shadow") and row.get("divergence") is not None and is_real_answer(row):
            divergence, kind = float(row["divergence"]), row.get("divergence_kind") or "content"
            ok = acceptable(divergence, kind, max_divergence=self.max_divergence)
            latency = float((row.get("shadow") or {}).get("latency_s") or 0.0)
            sub = named(shadow_sub(row))
            sim_facts = replace(facts, sub=sub, sub_stats=self.subs.before(key, sub))
            out.append(Label("sim", ok, divergence, kind, sim_facts, replay_key, row["ts"], row["id"], latency, sub))
            masked = len((row.get("divergence_evidence") or {}).get("masked") or [])
            stats.add("sim", acceptable=ok, divergence=divergence, masked=masked)
            self.subs.label(key, sub, acceptable=ok, divergence=divergence)
            stats.sim_latency += latency
            stats.sim_answers += 1
        elif (
            row.get("provenance") == "sim"
            and not (row.get("observation") or {}).get("is_error")
            and not row.get("perturbation")
        ):
            stats.sim_latency += float(row.get("latency_ms") or 0.0) / 1000
            stats.sim_answers += 1
            self.subs.answered(key, named(((row.get("observation") or {}).get("source") or {}).get("sub")))
        answer = replayable(row)  # what replay may serve from this record (None: a miss)
        if is_real_answer(row):
            observation = answer or Observation.from_json(row["observation"])
            stats.real_latency += float(row.get("latency_ms") or 0.0) / 1000
            stats.real_answers += 1
            served = self.serve(row, key, replay_key)
            if isinstance(served, Served):
                label = self._replay_label(row, key, facts, replay_key, served, observation)
                out.append(label)
                stats.add("replay", acceptable=label.acceptable, divergence=label.divergence)
                stats.agreeing_sessions = len(self._agreeing.get(key, ()))
            self._note_write_or_read(row, key, replay_key, observation)
            if replay_key not in self.recorded_keys:
                self.recorded_keys.add(replay_key)
                self.recorded_version += 1
            if len(self.recorded_keys) > 2 * MAX_RECORDED_KEYS:  # forget keys replay no longer holds
                self.recorded_keys = {k for k in self.recorded_keys if k in self.sources}
                self.recorded_version += 1
        self.sources.note(row, replay_key, answer)
        return out

    def serve(self, row: dict[str, Any], key: str, replay_key: str) -> Served | Missed:
        """What replay would serve this record's call: its own key's recording, else one
        made for another value of an argument the tool only echoes (echoes.py); with
        tokens, a shared namespace's recording when the token has none of its own.
        `key`: the tool's key in the session's namespace."""
        session, occurrence = row["session"], int(row.get("occurrence") or 1)
        for visible in self.tenancy.visible_keys(replay_key, session):
            served = self.sources.serve(visible, session, occurrence)
            if isinstance(served, Served) or served.has_source:
                break
        if isinstance(served, Served) or served.has_source or row.get("safety_class") != "safe":
            return served
        alias = self.echoes.alias(
            key, replay_key, row["channel"], row["server"], row["tool"], row.get("arguments") or {}
        )
        if alias is None:
            return served
        other = self.sources.serve(alias.key, session, occurrence)
        if not isinstance(other, Served):
            return served
        return Served(substituted(other.observation, alias.recorded, alias.value), other.session, other.record_id)

    def _replay_label(
        self, row: dict[str, Any], key: str, facts: CallFacts, replay_key: str, served: Served, observation: Observation
    ) -> Label:
        result = compare(served.observation, observation, channel=row["channel"], noise=BUILTIN_NOISE)
        ok = acceptable(result.score, result.kind, max_divergence=self.max_divergence)
        if ok:
            agreeing = self._agreeing.setdefault(key, set())
            if len(agreeing) < MAX_AGREEING:
                agreeing.update((row["session"], served.session))
        return Label("replay", ok, result.score, result.kind, facts, replay_key, row["ts"], row["id"], 0.0)

    def _note_write_or_read(self, row: dict[str, Any], key: str, replay_key: str, observation: Observation) -> None:
        channel, server = row["channel"], row["server"]
        if row.get("safety_class") == "safe":
            self.writes.read(
                channel, server, key, replay_key, observation, lambda before, after: self._same(before, after, channel)
            )
            self.echoes.observe(key, replay_key, channel, server, row["tool"], row.get("arguments") or {}, observation)
        else:
            self.writes.wrote(channel, server, key)

    def _same(self, before: Observation, after: Observation, channel: str) -> bool:
        result = compare(before, after, channel=channel, noise=BUILTIN_NOISE)
        return acceptable(result.score, result.kind, max_divergence=self.max_divergence)

    def add_all(self, rows: Iterable[dict[str, Any]]) -> list[Label]:
        out: list[Label] = []
        for row in sorted(rows, key=lambda r: (r["ts"], r["id"])):
            out.extend(self.add(row))
        return out


def labels_from_rows(
    rows: Iterable[dict[str, Any]], *, max_divergence: float = 0.2, tenancy: Tenancy = NO_TOKENS
) -> list[Label]:
    return LabelBuilder(max_divergence=max_divergence, tenancy=tenancy).add_all(rows)
