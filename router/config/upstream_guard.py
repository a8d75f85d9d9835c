"""The `upstream_guard` section: limits that protect the real side, with defaults for
every upstream and overrides per upstream (an MCP server's name, an HTTP host as
`host` or `host:port`, `shell` for the sandbox pool, `browser`). See
router/addons/upstream_guard/guard.py for what each limit does."""

from __future__ import annotations

from typing import Any

from pydantic import Field, PositiveFloat, PositiveInt, field_validator

from backends.options import Strict


class GuardLimits(Strict):
    """One upstream's limits. In `upstream_guard.upstreams`, a key left out takes the default's value."""

    max_concurrent: PositiveInt | None = Field(
        default=None,
        description="Real calls in flight at once, across replicas; past it a call is refused (`503`). Unset: no cap.",
    )
    budget: PositiveInt | None = Field(
        default=None,
        description="Real calls per token per `budget_window_s`, across replicas; past it `429`. Unset: no budget.",
    )
    budget_window_s: PositiveFloat = Field(default=60.0, description="The budget's window (fixed windows, in seconds).")
    breaker_failures: int = Field(
        default=5,
        ge=0,
        description="Consecutive failures of the real side that open the circuit breaker (`0`: no breaker).",
    )
    breaker_cooldown_s: PositiveFloat = Field(
        default=30.0, description="An open breaker refuses calls this long, then lets one trial through."
    )


_OVERRIDABLE = tuple(GuardLimits.model_fields)


class UpstreamGuardConfig(Strict):
    """Protects the real side: per upstream a concurrency cap, a call budget per token and
    window, and a circuit breaker; shared by replicas through Redis when the store is Redis."""

    enabled: bool = Field(default=True, description="Guard real calls (off: every real call is sent).")
    defaults: GuardLimits = Field(
        default=GuardLimits(), description="The limits of every upstream without an override."
    )
    upstreams: dict[str, GuardLimits] = Field(
        default={},
        description=(
            "Per upstream (an MCP server, an HTTP `host[:port]`, "
            "`shell`, `browser`): the limits that differ from `defaults`."
        ),
    )

    @field_validator("upstreams")
    @classmethod
    def _named_upstreams(cls, upstreams: dict[str, GuardLimits]) -> dict[str, GuardLimits]:
        for name in upstreams:
            if not name or name != name.strip() or any(ch in name for ch in "/ \t"):
                raise ValueError(
                    f"an upstream is an MCP server's name, an HTTP host[:port], 'shell' or 'browser', got {name!r}"
                )
        return upstreams

    def limits_for(self, upstream: str) -> dict[str, Any]:
        """The limits of `upstream` (the keys of `GuardLimits`): its override's keys over the defaults."""
        override = self.upstreams.get(upstream) or self.upstreams.get(upstream.lower())
        values = self.defaults.model_dump()
        if override is not None:
            values.update({key: getattr(override, key) for key in _OVERRIDABLE if key in override.model_fields_set})
        return values
