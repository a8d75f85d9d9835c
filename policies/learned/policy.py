"""`LearnedPolicy`: each call to the cheapest route whose answer is likely faithful.

For a call, each candidate route (replay, sim) gets P(acceptable): from the
model's derived scorer once the tool has `min_labels` labels for that route and
the route was trained, else from the per-tool Beta-Binomial lower bound. A
route whose probability clears its threshold is eligible; among eligible routes
and real, the lowest `price + latency_weight * expected latency` wins. The
reason carries the probabilities and thresholds.

Replay has one more way in, for tools with few labels: a tool whose real answers
agreed with what replay would have served in at least `replay_min_sessions`
distinct sessions, and never differed from it, replays (the rule is stated in
the reason). Below `min_labels` the estimate is the posterior mean under a prior
fitted across tools of the same kind (prior.py), compared with `target_fidelity`.

Guards before any of that: only calls the safety gate classes `safe` may leave
the real side (unless `simulate_side_effects`), replay needs a real recording
of the call's replay key and is not eligible after a real call with side effects
in this session that may have changed it (`after_call` notes those; a write
known to leave this tool's answers unchanged does not count: write_effects.py),
and stateful channels never replay (the sticky policy pins their first route).
Exploration: `explore_rate` of calls decided real are shadowed, and the same
share of read-only calls decided sim or replay go real with shadow, so labels
keep coming and a drifting tool is noticed. Draws are a stable hash of the
session and step: the policy stays a pure function.

Per sub-provenance (subs.py): the sim route is judged for the sub its answer would
come with (`state`, `model`, …: the `expected_sub` hook's answer, else the sub most
of the tool's simulated answers came with): the per-(tool, sub) estimate when that
sub has labels, and the sub's features in the classifier's score.

Pure: `decide` reads the model and state it holds (swapped whole by reloads),
and does no I/O (nor may `expected_sub`). What is stable about a call for a model (its static features'
score, its replay key) is cached per call, and the cache follows the model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from calls import Call, Decision, ReplayAlias, Route, Session
from policies.learned.features import (
    Feature,
    ToolStats,
    dynamic_features,
    hashed,
    static_features,
    sub_features,
    tool_key,
)
from policies.learned.model import LearnedModel
from policies.learned.state import EMPTY_STATE, LearnedState
from policies.learned.subs import sub_key
from policies.marks import SideEffects
from policies.safety.verdict import SafetyVerdict

POLICY = "learned"
STATEFUL_CHANNELS = frozenset({"shell", "browser"})
_UNLABELLED_BOUND = 0.0  # a tool with no labels at all: never trusted off the real side
# Calls whose static score and replay key are cached (agents repeat calls); the cache
# is emptied when full or when the model changes. Arguments longer than this (as text)
# are not cached: they would hold memory for calls unlikely to repeat.
_CACHE_ENTRIES = 4096
_CACHE_MAX_ARGUMENTS = 2048


@dataclass(frozen=True, slots=True)
class LearnedSettings:
    target_fidelity: float = 0.9
    min_labels: int = 20
    explore_rate: float = 0.05
    latency_weight: float = 0.1  # cost per second of expected latency
    sim_price: float = 0.1
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # cost.<server>.<tool> (globs)
    simulate_side_effects: bool = False
    replay_min_sessions: int = 2  # distinct agreeing sessions (and no disagreement) that let a tool replay

    def real_price(self, server: str, tool: str) -> float:
        for server_glob, tools in self.prices.items():
            if fnmatchcase(server, server_glob):
                for tool_glob, price in tools.items():
                    if fnmatchcase(tool, tool_glob):
                        return float(price)
        return 1.0


@dataclass(slots=True)  # not frozen: built twice per decision, and frozen init is slower
class Candidate:
    route: str
    probability: float | None  # None: not eligible before scoring
    threshold: float | None
    source: str  # "model", "prior (n labels)", or why it is not eligible
    cost: float
    rule: str = ""  # the evidence rule that makes it eligible whatever the probability

    @property
    def eligible(self) -> bool:
        if self.probability is None:
            return False
        return bool(self.rule) or (self.threshold is not None and self.probability >= self.threshold)

    def describe(self) -> str:
        if self.probability is None:
            return f"{self.route}: {self.source}"
        if self.rule:
            return f"{self.route}: {self.rule}, cost {self.cost:.2f}"
        sign = ">=" if self.eligible else "<"
        return (
            f"{self.route}: P(ok)={self.probability:.3f} {sign} "
            f"{self.threshold:.3f} ({self.source}), cost {self.cost:.2f}"
        )

    def to_json(self) -> dict:
        return {
            "route": self.route,
            "probability": None if self.probability is None else round(self.probability, 6),
            "threshold": self.threshold,
            "source": self.source,
            "rule": self.rule or None,
            "cost": round(self.cost, 4),
            "eligible": self.eligible,
        }


@dataclass(frozen=True, slots=True)
class Assessment:
    route: Route
    candidates: tuple[Candidate, ...]
    real_cost: float
    reason: str
    replay_as: ReplayAlias | None = None  # replay a recording made for another value of an echoed argument


class LearnedPolicy:
    name = POLICY
    wants_safety = True

    def __init__(
        self,
        settings: LearnedSettings = LearnedSettings(),
        *,
        replay_key_of: Callable[[Call], str] | None = None,
        model: LearnedModel | None = None,
        state: LearnedState = EMPTY_STATE,
        expected_sub: Callable[[Call, Session], str | None] | None = None,
    ) -> None:
        self.settings = settings
        self.replay_key_of = replay_key_of
        # The sub-provenance the sim side would answer a call with, known without I/O
        # (None: not known; the tool's usual sub is used).
        self.expected_sub = expected_sub
        self.model = model  # swapped whole by a reload
        self.state = state  # swapped whole by a refresh
        self._cache: dict[tuple, _CallEntry] = {}
        self._cache_model: LearnedModel | None = model
        self._prices: dict[tuple[str, str], float] = {}
        self._prices_of: LearnedSettings | None = None

    def decide(self, call: Call, session: Session, safety: SafetyVerdict | None = None) -> Decision:
        assessment = self.assess(call, session, safety)
        route, reason = assessment.route, assessment.reason
        if call.channel not in STATEFUL_CHANNELS and self._explores(call, session):
            if route is Route.REAL:
                route, reason = (
                    Route.SHADOW,
                    f"{reason}; explored: shadowed (learned.explore_rate {self.settings.explore_rate:g})",
                )
            elif _is_safe(safety):
                route, reason = (
                    Route.SHADOW,
                    f"{reason}; explored: served real with shadow instead of {route} (learned.explore_rate "
                    f"{self.settings.explore_rate:g})",
                )
        return Decision(route, self.name, reason, replay_as=assessment.replay_as if route is Route.REPLAY else None)

    def assess(self, call: Call, session: Session, safety: SafetyVerdict | None = None) -> Assessment:
        settings, state, model = self.settings, self.state, self.model
        own_key = state.tenancy.own(call.session_id) + tool_key(call.channel, call.server, call.tool)
        # The statistics this session's token may be served: its own and the shared namespaces'.
        key = state.tenancy.view_key(call.session_id, tool_key(call.channel, call.server, call.tool), state.stats)
        stats = state.stats.get(key)
        real_latency = (stats.mean_latency("real") if stats else None) or 0.0
        real_cost = self._real_price(call.server, call.tool) + settings.latency_weight * real_latency
        if not _is_safe(safety) and not settings.simulate_side_effects:
            cls = safety.cls if safety is not None else "unclassified"
            return Assessment(Route.REAL, (), real_cost, f"{cls} calls go real (learned.simulate_side_effects is off)")
        # Made once per call, shared by both routes' scorers.
        entry: _CallEntry | None = None
        dynamic: list[Feature] | None = None
        alias: ReplayAlias | None = None
        candidates = []
        for route in ("replay", "sim"):
            price = 0.0 if route == "replay" else settings.sim_price
            latency = (
                0.0 if route == "replay" else ((stats.mean_latency("sim") if stats else None) or state.sim_latency_s)
            )
            cost = price + settings.latency_weight * latency
            blocked = self._blocked(route, call, session)
            if blocked:
                candidates.append(Candidate(route, None, None, blocked, cost))
                continue
            labels = stats.labels(route) if stats else 0
            route_model = model.routes.get(route) if model is not None else None
            rule = self._agreement_rule(stats) if route == "replay" else ""
            sub = self._sub(call, session, own_key) if route == "sim" else None
            by_sub = state.sub_stats.get(sub_key(key, sub)) if sub is not None else None
            if rule:
                probability, threshold, source = state.priors.get((key, route), _UNLABELLED_BOUND), None, "rule"
            elif model is not None and route_model is not None and labels >= settings.min_labels:
                if entry is None or dynamic is None:
                    entry, dynamic = self._entry(call, safety, model), dynamic_features(session.steps, stats)
                scorer = route_model.scorer
                score = entry.static_score(route, scorer) + scorer.partial(dynamic)
                if sub is not None:
                    score += scorer.partial(sub_features(call.server, call.tool, sub, by_sub))
                probability, threshold, source = (
                    scorer.calibrated(score),
                    route_model.threshold,
                    f"model {model.digest}",
                )
                source += f", {sub} answers" if sub is not None else ""
            elif sub is not None and by_sub is not None and by_sub.sim_labels:
                probability = state.sub_priors.get(sub_key(key, sub), _UNLABELLED_BOUND)
                threshold, source = settings.target_fidelity, f"per-tool estimate of {sub} answers, {_labels(by_sub)}"
            else:
                probability = state.priors.get((key, route), _UNLABELLED_BOUND)
                threshold, source = (
                    settings.target_fidelity,
                    f"per-tool estimate, {labels} label{'s' if labels != 1 else ''}",
                )
            candidate = Candidate(route, probability, threshold, source, cost, rule)
            # The replay key costs a canonical encoding and a digest: made only for a
            # replay the probability would allow.
            replay_key = self._replay_key(call, entry) if route == "replay" and candidate.eligible else None
            if (
                route == "replay"
                and candidate.eligible
                and (replay_key is None or not state.recorded(replay_key, call.session_id))
            ):
                alias = self._echo_alias(call, own_key, replay_key)
                if alias is None:
                    candidate = Candidate(route, None, None, "no real recording of this call", cost)
                else:
                    candidate.source = (
                        f"{candidate.source}; recorded for another {alias.argument!r}, the value substituted"
                    )
                    if candidate.rule:
                        candidate.rule = (
                            f"{candidate.rule}; recorded for another {alias.argument!r}, the value substituted"
                        )
            candidates.append(candidate)
        best = min((c for c in candidates if c.eligible), key=lambda c: c.cost, default=None)
        route = Route(best.route) if best is not None and best.cost < real_cost else Route.REAL
        parts = "; ".join(c.describe() for c in candidates)
        reason = f"{parts}; real cost {real_cost:.2f} -> {route}"
        return Assessment(route, tuple(candidates), real_cost, reason, alias if route is Route.REPLAY else None)

    def _sub(self, call: Call, session: Session, own_key: str) -> str | None:
        """The sub-provenance the sim side would answer `call` with: the hook's, else the tool's usual one."""
        hook = self.expected_sub
        sub = hook(call, session) if hook is not None else None
        return sub if sub is not None else self.state.usual_subs.get(own_key)

    def _real_price(self, server: str, tool: str) -> float:
        """`cost.<server>.<tool>` (glob patterns matched once per tool, then cached)."""
        settings = self.settings
        if self._prices_of is not settings or len(self._prices) >= _CACHE_ENTRIES:
            self._prices, self._prices_of = {}, settings
        price = self._prices.get((server, tool))
        if price is None:
            price = self._prices[(server, tool)] = settings.real_price(server, tool)
        return price

    def _agreement_rule(self, stats) -> str:
        """The few-sessions rule for replay, stated, when the tool's record meets it."""
        needed = self.settings.replay_min_sessions
        if stats is None or needed <= 0 or stats.agreeing_sessions < needed or stats.replay_ok != stats.replay_labels:
            return ""
        return (
            f"answers agreed in {stats.agreeing_sessions} sessions "
            f"and never differed (learned.replay_min_sessions {needed})"
        )

    def _blocked(self, route: str, call: Call, session: Session) -> str:
        """Why `route` cannot serve this call before any probability, or ''."""
        if route != "replay":
            return ""
        if call.channel in STATEFUL_CHANNELS:
            return f"not eligible on the stateful {call.channel} channel"
        marks = session.find(SideEffects)
        if marks is not None and marks.calls:
            own = self.state.tenancy.own(call.session_id)  # write effects are learned per token namespace
            free = self.state.independent.get(own + tool_key(call.channel, call.server, call.tool), frozenset())
            for channel, server, tool in marks.calls:
                if (
                    channel == call.channel
                    and server == call.server
                    and own + tool_key(channel, server, tool) not in free
                ):
                    what = f"{tool!r} on {server!r}" if tool else f"{server!r}"
                    return (
                        "not eligible after a real call with side effects "
                        f"({what}) in this session that may have changed it"
                    )
        return ""

    def _replay_key(self, call: Call, entry: _CallEntry | None) -> str | None:
        """The call's replay key as the router makes it (cached with the call), or None."""
        if self.replay_key_of is None:
            return None
        if entry is None:
            entry = self._entry(call, None, self.model)
        if entry.replay_key is None:
            entry.replay_key = self.replay_key_of(call)
        return entry.replay_key

    def _echo_alias(self, call: Call, key: str, replay_key: str | None) -> ReplayAlias | None:
        """A recording made for another value of an argument this tool only echoes
        (policies/learned/echoes.py), when the evidence allows and it is recorded."""
        echoes = self.state.echoes
        if not echoes.generalised or replay_key is None:
            return None
        alias = echoes.alias(key, replay_key, call.channel, call.server, call.tool, call.arguments)
        return alias if alias is not None and alias.key in self.state.recorded_keys else None

    def _entry(self, call: Call, safety: SafetyVerdict | None, model: LearnedModel | None) -> _CallEntry:
        """What is stable about a call (for a model): its static features' score per
        route and its replay key, cached by the call's tool, safety class and arguments."""
        safety_cls = str(safety.cls) if safety is not None else None
        arguments = repr(call.arguments)  # JSON values: equal text, equal arguments
        cache_key = (call.channel, call.server, call.tool, safety_cls, arguments)
        if self._cache_model is not model or len(self._cache) >= _CACHE_ENTRIES:
            self._cache, self._cache_model = {}, model
        entry = self._cache.get(cache_key)
        if entry is None:
            entry = _CallEntry(call, safety_cls)
            if len(arguments) <= _CACHE_MAX_ARGUMENTS:
                self._cache[cache_key] = entry
        return entry

    def _explores(self, call: Call, session: Session) -> bool:
        rate = self.settings.explore_rate
        if rate <= 0:
            return False
        digest = hashlib.blake2b(
            f"{session.id}\x1f{session.steps}\x1f{call.server}\x1f{call.tool}".encode(), digest_size=8
        ).digest()
        return int.from_bytes(digest, "little") / 2**64 < rate


class _CallEntry:
    """A call's stable part: the score of its static features per route (made on first
    use, from the hashed features shared by both routes) and its replay key."""

    __slots__ = ("call", "safety", "columns", "scores", "replay_key")

    def __init__(self, call: Call, safety: str | None) -> None:
        self.call, self.safety = call, safety
        self.columns: dict[int, dict[int, float]] = {}  # hash width -> hashed static features
        self.scores: dict[str, float] = {}  # route -> static score (the intercept included)
        self.replay_key: str | None = None

    def static_score(self, route: str, scorer) -> float:
        score = self.scores.get(route)
        if score is None:
            columns = self.columns.get(scorer.n_bits)
            if columns is None:
                call = self.call
                columns = self.columns[scorer.n_bits] = hashed(
                    static_features(call.channel, call.server, call.tool, call.arguments, self.safety), scorer.n_bits
                )
            score = self.scores[route] = scorer.score_columns(columns)
        return score


def _labels(stats: ToolStats) -> str:
    return f"{stats.sim_labels} label{'s' if stats.sim_labels != 1 else ''}"


def _is_safe(safety: SafetyVerdict | None) -> bool:
    return safety is not None and str(safety.cls) == "safe" and safety.analysed


def after_call(session: Session, call: Call, decision: Decision) -> None:
    """The engine calls this once a call completed: a call that went to the real side
    and is not known to be read-only may have changed its server, so the recordings
    it may have changed are not replayed to this session from now on."""
    if decision.route in (Route.REAL, Route.SHADOW) and decision.safety != "safe":
        session.slice(SideEffects).calls.add((call.channel, call.server, call.tool))
