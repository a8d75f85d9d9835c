"""The `episodes` section: episodes for RL loops (router/episodes) — caps, time to
live, the routes an episode may ask for, and the verifiers that score them."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from backends.options import Strict

EpisodeRoute = Literal["real", "sim", "replay", "shadow", "deny", "fork", "learned", "rehearsal"]


class VerifierConfig(Strict):
    """One verifier: exactly one of `entry_point` and `command`."""

    entry_point: str | None = Field(
        default=None,
        description=(
            "`module:function`, called with the episode (its records and final state); returns the reward (a number)."
        ),
    )
    command: str | None = Field(
        default=None,
        description=(
            "A shell command run in the episode's real sandbox; its last "
            "number printed, else its exit code (0 → 1.0), is the reward."
        ),
    )
    timeout_s: PositiveFloat = Field(default=60.0, description="Deadline of one verification.")

    @model_validator(mode="after")
    def _exactly_one(self) -> VerifierConfig:
        if (self.entry_point is None) == (self.command is None):
            raise ValueError("a verifier names exactly one of entry_point and command")
        if self.entry_point is not None and ":" not in self.entry_point:
            raise ValueError(f"entry_point {self.entry_point!r} is not of the form module:function")
        return self


class EpisodesConfig(Strict):
    enabled: bool = Field(
        default=True, description="Serve episodes (`/episodes`, `/ws`, `/mcp/e/{id}`) on `simroute serve`."
    )
    max_open_per_token: PositiveInt = Field(
        default=256,
        description=(
            "Cap on open episodes per token (one namespace without "
            "tokens); past it a reset is refused (HTTP 429), not queued."
        ),
    )
    idle_ttl_s: PositiveFloat = Field(
        default=600.0,
        description=(
            "An episode idle this long is reaped (its sandbox, browser "
            "and upstreams freed); a reset may ask for less or more."
        ),
    )
    max_ttl_s: PositiveFloat = Field(default=86400.0, description="The longest idle TTL a reset may ask for.")
    routes: list[EpisodeRoute] = Field(
        default=["real", "sim", "replay", "shadow", "deny", "learned", "rehearsal"],
        description=(
            "The routes (modes) a reset may ask for; an episode's route "
            "replaces the config's mode and rules (the safety gate stays)."
        ),
    )
    verifiers: dict[str, VerifierConfig] = Field(
        default={}, description="Verifiers by name, which `verify` runs to score an episode."
    )
    default_verifier: str | None = Field(default=None, description="The verifier of an episode whose reset names none.")
    on_miss: Literal["error", "real", "sim"] = Field(
        default="error",
        description=(
            "What an episode's replay miss does when its reset does not say (`options.on_miss`): `error` (an error "
            "observation, `infra_error` true), `real` (sent to the real side, recorded) or `sim`. Episodes follow "
            "this, not `replay.on_miss`/`replay.record_mode` (those decide for agent sessions)."
        ),
    )

    @model_validator(mode="after")
    def _known_default(self) -> EpisodesConfig:
        if self.default_verifier is not None and self.default_verifier not in self.verifiers:
            raise ValueError(f"default_verifier {self.default_verifier!r} is not one of the verifiers")
        return self
