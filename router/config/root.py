"""The configuration file: one YAML document, validated before anything starts.
The root (`Config`) and the checks across sections live here, the sections in
`router/config/sections.py`.

Errors name the file, the line and the key, e.g.
`simroute.yaml:12: rules[0].route: 'simulate' is not one of real, sim, ...`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, NonNegativeFloat, PositiveFloat, ValidationError, field_validator, model_validator

from backends.browser.options import BrowserConfig
from backends.mcp.servers import RealServerSpec, ServerSpec
from backends.mcp.virtual import VirtualServer
from backends.options import Strict
from backends.shell.options import ShellConfig
from calls import Mode, Route
from policies.perturbation import PerturbationsConfig
from policies.rules import Rule, parse_rule
from records.shared_state.location import StoreLocation
from router.config.episodes import EpisodesConfig
from router.config.fork import ForkConfig
from router.config.key_lines import line_for, line_index, split_key
from router.config.learned import LearnedConfig
from router.config.safety import RehearsalConfig, SafetyConfig
from router.config.sections import (
    HttpConfig,
    PinsConfig,
    RedactionConfig,
    ReplayConfig,
    ServiceConfig,
    SessionsConfig,
    ShadowConfig,
    StoreConfig,
)
from router.config.upstream_guard import UpstreamGuardConfig
from router.config.world_model import WorldModelConfig
from router.config.world_state import WorldStateConfig
from router.config.yaml_document import DocumentTooLarge, check_depth, check_expanded_size, describe_yaml_error

DEFAULT_CONFIG_NAME = "simroute.yaml"


class ConfigError(ValueError):
    """The configuration is missing, malformed or invalid. The message is for the user."""


class Config(Strict):
    mode: Mode = Field(
        default=Mode.REAL,
        description=(
            "The route when no rule matches: `real`, `sim`, `replay`, `shadow`, `deny`, `fork`, `learned` or"
            " `rehearsal`."
        ),
    )
    mcp_servers: dict[str, ServerSpec] = Field(
        default={},
        alias="mcpServers",
        description="The MCP servers simroute fronts (the Claude Desktop / Cursor format).",
    )
    servers: dict[str, ServerSpec] = Field(default={}, description="VS Code's spelling of `mcpServers`.")
    rules: list[Any] = Field(
        default=[], description="Ordered routing rules; the first whose `match` fits decides the route."
    )
    replay: ReplayConfig = Field(default=ReplayConfig(), description="Replay of recorded answers.")
    store: StoreConfig = Field(default=StoreConfig(), description="Where records live.")
    sessions: SessionsConfig = Field(default=SessionsConfig(), description="Agent sessions.")
    world_model: WorldModelConfig = Field(default=WorldModelConfig(), description="The simulated side.")
    shadow: ShadowConfig = Field(default=ShadowConfig(), description="Shadowing and the noise model.")
    shell: ShellConfig = Field(default=ShellConfig(), description="The shell channel.")
    browser: BrowserConfig = Field(default=BrowserConfig(), description="The browser channel.")
    http: HttpConfig = Field(default=HttpConfig(), description="The HTTP(S) channel.")
    safety: SafetyConfig = Field(default=SafetyConfig(), description="The safety gate.")
    rehearsal: RehearsalConfig = Field(default=RehearsalConfig(), description="Rehearsal mode.")
    fork: ForkConfig = Field(
        default=ForkConfig(), description="Forks: destructive calls run on a throwaway copy of the real state."
    )
    pins: PinsConfig = Field(default=PinsConfig(), description="Tool-definition pins (the rug-pull defence).")
    learned: LearnedConfig = Field(default=LearnedConfig(), description="The learned router.")
    episodes: EpisodesConfig = Field(default=EpisodesConfig(), description="Episodes for RL loops.")
    perturbations: PerturbationsConfig = Field(
        default=PerturbationsConfig(),
        description="Seeded perturbations: faults, delays and cut answers on every route.",
    )
    cost: dict[str, dict[str, NonNegativeFloat]] = Field(
        default={}, description="The price of a real call per server and tool (globs); default 1.0."
    )
    redaction: RedactionConfig = Field(
        default=RedactionConfig(), description="Secrets redacted before anything is stored."
    )
    service: ServiceConfig = Field(default=ServiceConfig(), description="Who may talk to simroute over the network.")
    upstream_guard: UpstreamGuardConfig = Field(
        default=UpstreamGuardConfig(),
        description="Protects the real side: concurrency caps, call budgets, circuit breakers.",
    )
    world_state: WorldStateConfig = Field(
        default=WorldStateConfig(),
        description="Each session's world kept outside the model; simulated calls answered from it first.",
    )
    call_timeout_s: PositiveFloat = Field(
        default=60.0, description="Deadline for one real call; a timeout answers with an error result, never a hang."
    )
    startup_timeout_s: PositiveFloat = Field(
        default=30.0, description="An upstream that has not completed its handshake by then has failed to start."
    )
    list_timeout_s: PositiveFloat = Field(
        default=30.0, description="Deadline of an upstream's tools, resources or prompts listing (its start included)."
    )

    # Set by the loader, not the file.
    base_dir: Path = Field(
        default_factory=Path.cwd, exclude=True, description="The folder relative paths are resolved against."
    )
    source: str = Field(default="<defaults>", exclude=True, description="Where the config was read from, for messages.")

    @model_validator(mode="before")
    @classmethod
    def _rehearsal_mode(cls, data: Any) -> Any:
        """`mode: rehearsal` is shorthand for `mode: real` with `rehearsal.enabled: true`."""
        if isinstance(data, dict) and data.get("mode") == "rehearsal":
            section = data.get("rehearsal")
            data = {
                **data,
                "mode": "real",
                "rehearsal": {**section, "enabled": True} if isinstance(section, dict) else {"enabled": True},
            }
        return data

    @field_validator("mode", mode="before")
    @classmethod
    def _known_mode(cls, value: Any) -> Any:
        if isinstance(value, str) and value not in {str(m) for m in Mode}:
            raise ValueError(f"{value!r} is not one of real, sim, replay, shadow, deny, learned, rehearsal")
        return value

    @model_validator(mode="after")
    def _one_server_table(self) -> Config:
        clash = set(self.mcp_servers) & set(self.servers)
        if clash:
            raise ValueError(f"server {sorted(clash)[0]!r} is defined in both mcpServers and servers")
        for channel in self.local_channels():
            if channel in self.upstreams:
                raise ValueError(
                    f"server name {channel!r} is taken by simroute's {channel} tools: rename the server or set "
                    f"{channel}.enabled: false"
                )
        return self

    def local_channels(self) -> list[str]:
        """Channels whose tools simroute serves itself; each is also the `server` of its calls."""
        return [name for name, section in (("shell", self.shell), ("browser", self.browser)) if section.enabled]

    @property
    def upstreams(self) -> dict[str, ServerSpec]:
        """Every MCP server agents see, real or virtual."""
        return {**self.mcp_servers, **self.servers}

    @property
    def real_upstreams(self) -> dict[str, RealServerSpec]:
        """The servers simroute connects to (not the virtual ones)."""
        return {name: spec for name, spec in self.upstreams.items() if not isinstance(spec, VirtualServer)}

    @property
    def virtual_servers(self) -> dict[str, VirtualServer]:
        """The servers declared only here (`type: virtual`): no real side exists for them."""
        return {name: spec for name, spec in self.upstreams.items() if isinstance(spec, VirtualServer)}

    @property
    def store_location(self) -> StoreLocation:
        """Where the record store lives (Redis, shared by replicas, or a SQLite file):
        the one place that decides which (records/shared_state/)."""
        path = Path(self.store.sqlite_path).expanduser()
        store = self.store
        return StoreLocation(
            redis_url=store.redis_url,
            sqlite_path=path if path.is_absolute() else self.base_dir / path,
            base_dir=self.base_dir,
            max_log=store.max_log,
            synchronous=store.synchronous,
            busy_timeout_ms=store.busy_timeout_ms,
        )

    @property
    def store_path(self) -> Path:
        """The SQLite file (or, with a Redis store, where its local files go: the spool, the key)."""
        return self.store_location.store_path

    def open_store(self, *, read_only: bool = False):
        """The configured record store (not yet opened)."""
        return self.store_location.open_store(read_only=read_only)

    @property
    def spool_path(self) -> Path:
        return self.store_location.spool_path

    @property
    def redaction_key_file(self) -> Path:
        if self.redaction.key_file is None:
            return self.store_path.parent / "redaction.key"
        path = Path(self.redaction.key_file).expanduser()
        return path if path.is_absolute() else self.base_dir / path

    @property
    def ca_dir(self) -> Path:
        path = Path(self.http.ca_dir).expanduser()
        return path if path.is_absolute() else self.base_dir / path

    @property
    def model_path(self) -> Path:
        path = Path(self.world_model.model_path).expanduser()
        return path if path.is_absolute() else self.base_dir / path

    @property
    def shell_workspace(self) -> Path | None:
        if self.shell.workspace is None:
            return None
        path = Path(self.shell.workspace).expanduser()
        return path if path.is_absolute() else self.base_dir / path

    @property
    def learned_model_path(self) -> Path:
        path = Path(self.learned.model).expanduser()
        return path if path.is_absolute() else self.base_dir / path

    def uses_learned(self) -> bool:
        """Whether the mode or a rule hands calls to the learned router."""
        return self.mode is Mode.LEARNED or any(
            rule.route is Mode.LEARNED for rule in [*self.parsed_rules(), *self.parsed_allow_rules()]
        )

    def may_simulate(self) -> bool:
        """Whether any route of this config can reach the world model."""
        simulating = {Route.SIM, Route.SHADOW, Route.FORK}  # a call that cannot fork is simulated
        return (
            self.uses_learned()
            or bool(self.virtual_servers)  # a virtual server answers from the world model
            or self.mode in simulating
            or any(rule.route in simulating for rule in self.parsed_rules())
            or self.replay.on_miss == "sim"
            or self.shadow.rate > 0
            or any(rule.shadow_rate for rule in self.parsed_rules())
            or (self.rehearsal.enabled and self.rehearsal.on_divert in ("sim", "fork"))
            or self.pins.policy == "rehearse"
            or any(rule.route in simulating for rule in self.parsed_allow_rules())
        )

    def may_run_real(self, channel: str) -> bool:
        """Whether any route of this config can send a `channel` call to its real side."""
        reaching = {Route.REAL, Route.SHADOW, Route.REPLAY, Mode.LEARNED}  # a replay miss may go real
        if self.mode in reaching or (channel == "shell" and self.may_fork()):  # a fork copies the real sandbox
            return True
        for rule in [*self.parsed_rules(), *self.parsed_allow_rules()]:
            if rule.route in reaching and (rule.channel is None or rule.channel(channel)):
                return True
        return False

    def may_fork(self) -> bool:
        """Whether any route of this config can fork (a fork copies the real sandbox)."""
        forking = self.mode is Mode.FORK or (self.rehearsal.enabled and self.rehearsal.on_divert == "fork")
        return forking or any(rule.route is Mode.FORK for rule in [*self.parsed_rules(), *self.parsed_allow_rules()])

    def parsed_rules(self) -> list[Rule]:
        return [parse_rule(rule, index=i) for i, rule in enumerate(self.rules)]

    def parsed_allow_rules(self) -> list[Rule]:
        return [parse_rule(rule, index=i) for i, rule in enumerate(self.rehearsal.allow)]

    def http_canonical(self):
        """The canonical form of HTTP call arguments (for keys), from the http section."""
        from shadow.compare.http_canonical import canonical_form

        return canonical_form(ignore_query=self.http.ignore_query, ignore_body_fields=self.http.ignore_body_fields)

    def replay_key_scheme(self) -> list:
        """What, besides ignore_arguments, shapes replay keys: changing it re-keys records."""
        http = self.http
        return [
            sorted(http.ignore_query),
            sorted(http.ignore_body_fields),
            sorted(h.lower() for h in self.replay.credential_headers),
        ]

    def sim_timeout_for(self, server: str) -> float:
        spec = self.upstreams.get(server)
        return (spec.sim_timeout if spec is not None and spec.sim_timeout else None) or self.world_model.deadline_s

    def timeout_for(self, server: str) -> float:
        spec = self.real_upstreams.get(server)
        return (spec.timeout if spec is not None and spec.timeout else None) or self.call_timeout_s


def load_config(path: str | Path | None) -> Config:
    """Load and validate a config file. With no path, `./simroute.yaml` if it
    exists, else the defaults. Raises ConfigError naming file, line and key."""
    if path is None:
        default = Path.cwd() / DEFAULT_CONFIG_NAME
        if not default.exists():
            return Config()
        path = default
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config file: {exc.strerror or exc}") from exc
    return parse_config(text, source=str(path), base_dir=path.resolve().parent)


def parse_config(text: str, *, source: str = "<config>", base_dir: Path | None = None) -> Config:
    try:
        check_depth(text)  # before compose and safe_load, which recurse per level
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        check_expanded_size(root)  # before anything walks the values
        data = yaml.safe_load(text)
    except DocumentTooLarge as exc:
        raise ConfigError(f"{source}:{exc.line}: {exc}") from exc
    except yaml.YAMLError as exc:
        line, problem = describe_yaml_error(exc, text)
        raise ConfigError(f"{source}:{line}: invalid YAML: {problem}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}:1: the config must be a mapping of keys (mode, mcpServers, rules, ...)")
    lines = line_index(root)
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError("\n".join(_describe(err, source, lines) for err in exc.errors())) from exc
    config.base_dir = base_dir or Path.cwd()
    config.source = source
    for where, rules in ((("rules",), config.rules), (("rehearsal", "allow"), config.rehearsal.allow)):
        for i, rule in enumerate(rules):
            try:
                parse_rule(rule, index=i)
            except ValueError as exc:
                key, _, problem = str(exc).partition(": ")
                loc: tuple[Any, ...] = (*where, i, *split_key(key)) if problem else (*where, i)
                line = line_for(loc, lines)
                raise ConfigError(f"{source}:{line}: {_format_loc(loc)}: {problem or exc}") from exc
            plan = rule.get("perturbation") if isinstance(rule, dict) else None
            if plan is not None and plan not in config.perturbations.plans:
                loc = (*where, i, "perturbation")
                raise ConfigError(
                    f"{source}:{line_for(loc, lines)}: {_format_loc(loc)}: {plan!r} is not one of perturbations.plans"
                )
    if (missing := config.world_model.lora_problem(config.base_dir)) is not None:  # not at the first simulated call
        loc = ("world_model", "lora_path")
        raise ConfigError(f"{source}:{line_for(loc, lines)}: {_format_loc(loc)}: {missing}")
    world = config.world_model.world
    if world is not None:  # its file read now: a missing world file is a config error, not a failed call
        try:
            config.world_model.world = world.loaded(config.base_dir)
            config.world_model.world.render()
        except ValueError as exc:
            loc = ("world_model", "world", "file") if world.file else ("world_model", "world")
            raise ConfigError(f"{source}:{line_for(loc, lines)}: {_format_loc(loc)}: {exc}") from exc
    return config


def _format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{_printable(part)}" if out else _printable(part))
    return out or "(top level)"


def _printable(key: Any) -> str:
    """A key as written, or quoted with escapes when it holds a line break or another
    control character (one problem per line of the message), or when it is empty or starts
    or ends with a space (which would vanish from the message)."""
    text = str(key)
    return text if text.isprintable() and text.strip() == text and text else repr(text)


def _describe(error: Any, source: str, lines: dict[tuple[Any, ...], int]) -> str:
    # pydantic adds union member names ("StdioServer") to the location; drop them.
    loc = tuple(p for p in error["loc"] if p not in _UNION_TAGS)
    if loc and loc[0] == "mcp_servers":
        loc = ("mcpServers", *loc[1:])
    line = line_for(loc, lines)
    message = " ".join(str(error["msg"]).split())  # one line, whatever the value quoted in it
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    elif error["type"] == "value_error":
        message = message.removeprefix("Value error, ")
    return f"{source}:{line}: {_format_loc(loc)}: {message}"


_UNION_TAGS = {"stdio", "remote", "virtual"}
