"""A compiled perturbation plan and its pure decision.

`Plan.matching(call)` lists the rules whose `match` fits a call, each with the name
of the counter that numbers its calls (per session, or per session and tool). The
engine claims those call numbers where it claims session state (shared through
Redis when sessions are), then asks `Plan.decide`, a pure function of the seed, the
session key, the rule and its call number: the same seed gives the same
perturbations on any replica and in any rerun.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

from calls import Call, Perturbation
from policies.perturbation.config import DelayDistribution, PerturbationRuleConfig, PlanConfig
from policies.perturbation.draws import draw
from policies.rules import Rule, parse_rule
from policies.safety.verdict import SafetyClass, SafetyVerdict

_SEP = "\x1f"
_NORMAL = NormalDist()


@dataclass(frozen=True, slots=True)
class PerturbationRule:
    name: str
    config: PerturbationRuleConfig
    matcher: Rule
    at_steps: frozenset[int] | None

    def counter(self, plan: str, call: Call) -> str:
        """The name of the counter numbering this rule's calls in the call's scope."""
        base = f"{plan}{_SEP}{self.name}"
        return (
            f"{base}{_SEP}{call.channel}{_SEP}{call.server}{_SEP}{call.tool}" if self.config.scope == "tool" else base
        )

    def fires(self, *, seed: int, key: str, plan: str, n: int, step: int) -> bool:
        """Whether the rule perturbs its n-th call (at the session's `step`): every trigger holds."""
        config = self.config
        if n <= config.after_calls:
            return False
        if config.every is not None and n % config.every:
            return False
        if self.at_steps is not None and step not in self.at_steps:
            return False
        if config.kind == "rate_limit" and not _bucket_spent(n, config.limit or 0, config.window):
            return False
        return config.probability >= 1.0 or draw(seed, key, plan, self.name, n) < config.probability

    def perturbation(self, *, seed: int, key: str, plan: str, n: int) -> Perturbation:
        config = self.config
        status = config.status
        if config.kind == "error" and status is None:
            status = 503
        retry_after = config.retry_after_s if config.kind == "rate_limit" or status in (429, 503) else None
        return Perturbation(
            kind=config.kind,
            rule=f"{plan}:{self.name}",
            seed=seed,
            n=n,
            delay_s=_delay(config.delay_s, seed, key, plan, self.name, n),
            status=status,
            message=config.message or "",
            retry_after_s=retry_after,
            keep=config.keep if config.kind == "truncate" else 0.0 if config.kind == "empty" else 1.0,
            limit=config.limit,
            exit_code=config.exit_code,
            page_size=config.page_size if config.kind == "paginate" else 0,
            cursor_argument=config.cursor_argument,
            by_world_model=config.kind == "mislead" and config.mislead_with == "world_model",
        )


def _bucket_spent(n: int, limit: int, window: int | None) -> bool:
    """A bucket of `limit` calls per `window` calls (never refilled without a window):
    whether the n-th call finds it spent."""
    position = n - 1 if window is None else (n - 1) % window
    return position >= limit


def _delay(delay: float | DelayDistribution | None, seed: int, key: str, plan: str, rule: str, n: int) -> float:
    if delay is None:
        return 0.0
    if not isinstance(delay, DelayDistribution):
        return float(delay)
    u = draw(seed, key, plan, rule, n, salt="delay")
    if delay.distribution == "uniform":
        return delay.low_s + (delay.high_s - delay.low_s) * u
    z = _NORMAL.inv_cdf(min(max(u, 1e-12), 1 - 1e-12))  # a standard normal draw from the uniform one
    return delay.median_s * math.exp(delay.sigma * z)


@dataclass(frozen=True, slots=True)
class Plan:
    name: str
    seed: int
    per_session: bool
    rules: tuple[PerturbationRule, ...]
    # Whether a rule matches on the safety class (only then is a verdict built per call).
    needs_safety: bool = field(default=False)

    def matching(self, call: Call, safety: str | None = None) -> list[tuple[PerturbationRule, str]]:
        """The rules whose `match` fits `call` (with the safety gate's class, for the
        `safety` match key), each with its counter's name."""
        verdict = SafetyVerdict(SafetyClass(safety), "") if safety and self.needs_safety else None
        return [(rule, rule.counter(self.name, call)) for rule in self.rules if rule.matcher.matches(call, verdict)]

    def key(self, session_id: str, episode_seed: int | None) -> tuple[int, str]:
        """(seed, session key) of a session's draws: an episode draws from its own seed; a
        plan with `per_session` draws per session id too."""
        seed = self.seed if episode_seed is None else episode_seed
        return seed, session_id if self.per_session and episode_seed is None else ""

    def decide(
        self, matched: Sequence[tuple[PerturbationRule, int]], *, seed: int, key: str, step: int
    ) -> Perturbation | None:
        """The perturbation of a call whose matching rules got call numbers `matched`
        ((rule, n) in plan order), or None. Pure: no I/O, no clock, no global state."""
        for rule, n in matched:
            if rule.fires(seed=seed, key=key, plan=self.name, n=n, step=step):
                return rule.perturbation(seed=seed, key=key, plan=self.name, n=n)
        return None


def compile_plan(name: str, config: PlanConfig) -> Plan:
    """The plan `config` describes. Raises PolicyConfigError for a bad `match`."""
    rules = []
    for index, rule in enumerate(config.rules):
        rule_name = rule.name or f"{rule.kind}[{index}]"
        matcher = parse_rule({"match": rule.match, "route": "real", "name": rule_name}, index=index)
        rules.append(
            PerturbationRule(rule_name, rule, matcher, frozenset(rule.at_steps) if rule.at_steps is not None else None)
        )
    return Plan(
        name,
        config.seed,
        config.per_session,
        tuple(rules),
        needs_safety=any(rule.matcher.safety is not None for rule in rules),
    )
