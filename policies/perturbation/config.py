"""Perturbation plans as the config file writes them (strict pydantic models; each
field's description is the configuration reference's text). `plan.py` compiles a
`PlanConfig` into the `Plan` the engine asks."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    field_validator,
    model_validator,
)

from policies.rules import parse_rule

Kind = Literal["error", "latency", "timeout", "rate_limit", "empty", "truncate", "paginate", "mislead"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class DelayDistribution(_Strict):
    """A delay drawn per call (seeded like every decision): `uniform` between
    `low_s` and `high_s`, or `lognormal` around `median_s` with spread `sigma`."""

    distribution: Literal["uniform", "lognormal"] = Field(description="`uniform` or `lognormal`.")
    low_s: NonNegativeFloat = Field(default=0.0, description="`uniform`: the shortest delay.")
    high_s: NonNegativeFloat = Field(default=1.0, description="`uniform`: the longest delay.")
    median_s: PositiveFloat = Field(default=0.5, description="`lognormal`: the median delay.")
    sigma: NonNegativeFloat = Field(default=0.5, description="`lognormal`: the spread (the log's standard deviation).")

    @model_validator(mode="after")
    def _ordered(self) -> DelayDistribution:
        if self.distribution == "uniform" and self.low_s > self.high_s:
            raise ValueError(f"low_s {self.low_s:g} is above high_s {self.high_s:g}")
        return self


class PerturbationRuleConfig(_Strict):
    """One perturbation rule: which calls (`match`), when (triggers, all of which must
    hold), and what (`kind`). The first rule of a plan that fires perturbs the call."""

    name: str | None = Field(
        default=None, min_length=1, description="The rule's name in records (default: `<kind>[<index>]`)."
    )
    kind: Kind = Field(
        description="`error`, `latency`, `timeout`, `rate_limit`, `empty`, `truncate`, `paginate` or `mislead`."
    )
    match: dict[str, Any] = Field(
        default={},
        description="Which calls, in the match keys of routing `rules` (channel, server, tool, path, host…; globs).",
    )
    probability: float = Field(
        default=1.0, ge=0.0, le=1.0, description="Chance that a matching call is perturbed (a seeded draw)."
    )
    after_calls: int = Field(
        default=0, ge=0, description="Only calls after this many matching calls in the rule's scope."
    )
    every: PositiveInt | None = Field(default=None, description="Only every n-th matching call (the n-th, 2n-th…).")
    at_steps: list[int] | None = Field(
        default=None, description="Only at these steps of the session (0: its first call)."
    )
    scope: Literal["session", "tool"] = Field(
        default="session", description="What counts calls: the session, or the session's calls of each (server, tool)."
    )
    status: int | None = Field(
        default=None,
        ge=100,
        le=599,
        description="`error`: the HTTP status (default 503); the shell's exit code is `exit_code`.",
    )
    exit_code: int = Field(default=1, ge=1, le=255, description="`error`: the exit code a shell command gets.")
    message: str | None = Field(default=None, description="`error`: the error text (default: the channel's usual one).")
    retry_after_s: NonNegativeFloat = Field(
        default=1.0, description="`rate_limit`, `error` 429/503: the `Retry-After` told."
    )
    delay_s: NonNegativeFloat | DelayDistribution | None = Field(
        default=None,
        description="`latency`: seconds, or a distribution; `timeout`: how long the call hangs first (default 0).",
    )
    limit: PositiveInt | None = Field(
        default=None, description="`rate_limit`: calls allowed per window (counted in calls)."
    )
    window: PositiveInt | None = Field(
        default=None, description="`rate_limit`: the window's length in calls (unset: the bucket never refills)."
    )
    keep: float = Field(
        default=0.5, ge=0.0, lt=1.0, description="`truncate`: the share of a list's items (or a text) kept."
    )
    page_size: PositiveInt = Field(default=10, description="`paginate`: the items of a page.")
    cursor_argument: str = Field(
        default="cursor", min_length=1, description="`paginate`: the argument a follow-up call passes the cursor in."
    )
    mislead_with: Literal["mutation", "world_model"] = Field(
        default="mutation",
        description=(
            "`mislead`: `mutation` moves the answer's facts by the "
            "seed, keeping their types and format (datetimes 1–48 h, "
            "numbers 5–50 %, ids redrawn, names swapped for others the session saw); `world_model` has the world model "
            "rewrite the answer with it as the truth not to give."
        ),
    )

    @field_validator("match")
    @classmethod
    def _compiles(cls, match: dict[str, Any]) -> dict[str, Any]:
        parse_rule({"match": match, "route": "real"})  # the routing rules' match keys, checked the same way
        return match

    @model_validator(mode="after")
    def _kind_needs(self) -> PerturbationRuleConfig:
        if self.kind == "latency" and self.delay_s is None:
            raise ValueError("a latency rule needs delay_s (seconds, or a distribution)")
        if self.kind == "rate_limit":
            if self.limit is None:
                raise ValueError("a rate_limit rule needs limit (calls allowed per window)")
            if self.window is not None and self.window <= self.limit:
                raise ValueError(f"window ({self.window}) must be longer than limit ({self.limit})")
        if self.kind == "timeout" and isinstance(self.delay_s, DelayDistribution):
            raise ValueError("a timeout's delay_s is a number of seconds")
        return self


class PlanConfig(_Strict):
    """A perturbation plan: a seed and ordered rules."""

    seed: int = Field(
        default=0, description="The plan's seed (an episode's seed replaces it); the same seed, the same perturbations."
    )
    per_session: bool = Field(
        default=False,
        description=(
            "Draw per session id too: sessions differ (reruns match "
            "only with the same session ids). Episodes draw per seed."
        ),
    )
    rules: list[PerturbationRuleConfig] = Field(
        default=[], description="Ordered perturbation rules; the first that fires wins."
    )

    @model_validator(mode="after")
    def _unique_names(self) -> PlanConfig:
        names = [rule.name for rule in self.rules if rule.name is not None]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(
                f"two rules are named {twice[0]!r}: each needs its own name (records and call numbers use it)"
            )
        return self


class PerturbationsConfig(_Strict):
    """Seeded perturbations (faults, delays, cut answers) on every route."""

    plans: dict[str, PlanConfig] = Field(default={}, description="Perturbation plans by name.")
    apply: str | None = Field(
        default=None, description="The plan every call gets unless a rule or an episode names another."
    )

    @model_validator(mode="after")
    def _known_plan(self) -> PerturbationsConfig:
        if self.apply is not None and self.apply not in self.plans:
            raise ValueError(
                f"apply: {self.apply!r} is not one of the plans ({', '.join(sorted(self.plans)) or 'none defined'})"
            )
        return self
