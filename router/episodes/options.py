"""What a reset may ask for (`EpisodeOptions`), checked against the config before
anything starts: unknown servers, channels, routes or verifiers are clear errors."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, PositiveFloat, PositiveInt, ValidationError

from backends.options import Strict
from backends.world_model.world_document import WorldDocument, world_document_of
from policies.perturbation import Plan, PlanConfig, compile_plan
from router.config import Config
from router.config.episodes import EpisodeRoute

Channel = Literal["mcp", "shell", "browser", "http"]


class EpisodeOptionsError(ValueError):
    """A reset's options are invalid; the message says which and why."""


class RoutePlan(Strict):
    """An episode's route policy: a mode, and rules tried before it (the config's rule syntax)."""

    mode: EpisodeRoute = Field(description="The route when no rule matches (`learned` and `rehearsal` included).")
    rules: list[dict[str, Any]] = Field(default=[], description="Ordered rules, as in the config's `rules`.")


class EpisodeOptions(Strict):
    servers: list[str] | None = Field(
        default=None, description="The MCP servers in play (default: every configured one)."
    )
    channels: list[Channel] | None = Field(
        default=None, description="The channels in play: mcp, shell, browser (default: every enabled one)."
    )
    route: EpisodeRoute | RoutePlan | None = Field(
        default=None, description="The episode's route policy: a mode, or a mode with rules (default: the config's)."
    )
    files: dict[str, str] = Field(
        default={},
        description=(
            "The shell's initial files (path under /workspace → text): "
            "written into a real sandbox, told to a simulated one."
        ),
    )
    fork: str | None = Field(
        default=None,
        min_length=1,
        description="Start the shell from a copy of this workspace folder (one of the config's fork.workspaces).",
    )
    world: str | WorldDocument | None = Field(
        default=None,
        description=(
            "A world document (text, or date/facts/text): "
            "extends the configured world_model.world (`replace: true`: stands alone)."
        ),
    )
    recording: str | None = Field(
        default=None, min_length=1, description="The named recording this episode's replays come from."
    )
    record_as: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        description=(
            "Tag this episode's records as this named recording (its real answers are what `recording` replays)."
        ),
    )
    on_miss: Literal["error", "real", "sim"] | None = Field(
        default=None,
        description=(
            "What a replay miss does: error (infra_error), real or sim (default: episodes.on_miss, itself `error`)."
        ),
    )
    ttl_s: PositiveFloat | None = Field(
        default=None, description="Idle time after which the episode is reaped (default: episodes.idle_ttl_s)."
    )
    max_steps: PositiveInt | None = Field(
        default=None, description="Steps after which the episode is truncated (done)."
    )
    verifier: str | None = Field(
        default=None, description="The verifier that scores it (default: episodes.default_verifier)."
    )
    perturbation: str | PlanConfig | None = Field(
        default=None,
        description=(
            "A perturbation plan: the name of one in perturbations.plans, or a plan; drawn from the episode's seed."
        ),
    )

    @classmethod
    def parse(cls, data: dict[str, Any] | None, config: Config) -> EpisodeOptions:
        """Validated against the config; raises EpisodeOptionsError with every problem."""
        try:
            options = cls.model_validate(data or {})
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'options'}: {e['msg']}" for e in exc.errors())
            raise EpisodeOptionsError(f"invalid episode options: {problems}") from exc
        options.check(config)
        return options

    def check(self, config: Config) -> None:
        section = config.episodes
        unknown = sorted(set(self.servers or ()) - set(config.upstreams))
        if unknown:
            raise EpisodeOptionsError(
                f"invalid episode options: servers: {unknown[0]!r} is not a configured MCP server"
            )
        enabled = {"mcp", *config.local_channels(), *(["http"] if config.http.enabled else [])}
        off = sorted(set(self.channels or ()) - enabled)
        if off:
            raise EpisodeOptionsError(f"invalid episode options: channels: {off[0]!r} is not enabled in this config")
        mode = self.mode
        if mode is not None and mode not in section.routes:
            raise EpisodeOptionsError(
                f"invalid episode options: route: {mode!r} is not allowed here (episodes.routes: {section.routes})"
            )
        if self.ttl_s is not None and self.ttl_s > section.max_ttl_s:
            raise EpisodeOptionsError(
                f"invalid episode options: ttl_s: {self.ttl_s:g} is above episodes.max_ttl_s ({section.max_ttl_s:g})"
            )
        verifier = self.verifier
        if verifier is not None and verifier not in section.verifiers:
            raise EpisodeOptionsError(
                f"invalid episode options: verifier: {verifier!r} is not one of episodes.verifiers"
            )
        if isinstance(self.world, WorldDocument) and self.world.file is not None:
            raise EpisodeOptionsError(
                "invalid episode options: world.file: an episode's world is sent inline, not read from a file"
            )
        try:
            self.world_text(config)
        except ValueError as exc:
            raise EpisodeOptionsError(f"invalid episode options: world: {exc}") from exc
        plan = self.perturbation
        if isinstance(plan, str) and plan not in config.perturbations.plans:
            raise EpisodeOptionsError(
                f"invalid episode options: perturbation: {plan!r} is not one of perturbations.plans"
            )
        if self.files and "shell" not in self.in_play_channels(config):
            raise EpisodeOptionsError("invalid episode options: files: the shell channel is not in play")
        if self.fork is not None and self.fork not in config.fork.workspaces:
            raise EpisodeOptionsError(f"invalid episode options: fork: {self.fork!r} is not one of fork.workspaces")
        if self.fork is not None and "shell" not in self.in_play_channels(config):
            raise EpisodeOptionsError("invalid episode options: fork: the shell channel is not in play")
        for path in self.files:
            if path.startswith("/") or ".." in path.split("/") or not path.strip():
                raise EpisodeOptionsError(
                    f"invalid episode options: files: {path!r} is not a relative path under /workspace"
                )

    def world_text(self, config: Config) -> str | None:
        """The episode's world as the model reads it: the configured world extended (or
        replaced) by its own; None when it has none of its own (the configured one applies)."""
        own = world_document_of(self.world)
        if own is None:
            return None
        configured = config.world_model.world
        return (configured.merged(own) if configured is not None else own).render()

    def perturbation_plan(self, config: Config) -> Plan | None:
        """The episode's own perturbation plan (None: the configured one applies)."""
        plan = self.perturbation
        if plan is None:
            return None
        if isinstance(plan, str):
            return compile_plan(plan, config.perturbations.plans[plan])
        return compile_plan("episode", plan)

    @property
    def mode(self) -> str | None:
        return self.route.mode if isinstance(self.route, RoutePlan) else self.route

    def in_play_channels(self, config: Config) -> list[str]:
        enabled = ["mcp", *config.local_channels(), *(["http"] if config.http.enabled else [])]
        return [c for c in enabled if self.channels is None or c in self.channels]

    def scope(self, config: Config) -> frozenset[tuple[str, str]] | None:
        """The (channel, server) environments in play; None when nothing is narrowed."""
        if self.servers is None and self.channels is None:
            return None
        channels = self.in_play_channels(config)
        servers = self.servers if self.servers is not None else list(config.upstreams)
        pairs = {("mcp", server) for server in servers} if "mcp" in channels else set()
        pairs |= {
            (channel, channel) for channel in channels if channel != "mcp"
        }  # ("http", "http"): the http_request tool
        return frozenset(pairs)
