"""The configuration file: one YAML document, validated before anything starts.

Errors name the file, the line and the key, e.g.
`simroute.yaml:12: rules[0].route: 'simulate' is not one of real, sim, ...`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, PositiveFloat, PositiveInt, ValidationError, field_validator, model_validator

from policies.rules import Rule, parse_rule
from router.types import Route

DEFAULT_CONFIG_NAME = "simroute.yaml"


class ConfigError(ValueError):
    """The configuration is missing, malformed or invalid. The message is for the user."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class StdioServer(_Strict):
    command: str = Field(min_length=1)
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    timeout: PositiveFloat | None = None  # real-call deadline (s); default: call_timeout_s
    sim_timeout: PositiveFloat | None = None  # simulated-call deadline (s); default: world_model.deadline_s
    type: Literal["stdio"] | None = None  # VS Code's form names the transport


class RemoteServer(_Strict):
    url: str = Field(min_length=1)
    headers: dict[str, str] = {}
    timeout: PositiveFloat | None = None
    sim_timeout: PositiveFloat | None = None
    type: Literal["http", "streamable-http", "sse"] | None = None


def _server_kind(value: Any) -> str:
    if isinstance(value, dict):
        if "url" in value or value.get("type") in ("http", "streamable-http", "sse"):
            return "remote"
        return "stdio"
    return "remote" if isinstance(value, RemoteServer) else "stdio"


# A server entry is stdio (`command`) or remote (`url`), as in Claude Desktop,
# Cursor and VS Code configs.
ServerSpec = Annotated[
    Annotated[StdioServer, Tag("stdio")] | Annotated[RemoteServer, Tag("remote")],
    Discriminator(_server_kind),
]


class ReplayConfig(_Strict):
    on_miss: Literal["real", "sim", "error"] = "real"
    # Dotted argument paths left out of the replay key (request ids, timestamps).
    ignore_arguments: list[str] = []


class StoreConfig(_Strict):
    kind: Literal["sqlite"] = "sqlite"
    # Relative paths are relative to the config file's folder.
    path: str = ".simroute/records.db"
    # normal: a committed record survives a crash of simroute; full: also power loss.
    synchronous: Literal["normal", "full"] = "normal"


DEFAULT_MODEL_PATH = "~/.cache/simroute/models/SmolLM2-135M-Instruct.Q4_1.gguf"


class WorldModelConfig(_Strict):
    """The simulated side. `llama`: a GGUF model in-process; `openai`: any
    OpenAI-compatible server (llama-server, vLLM, SGLang)."""

    engine: Literal["llama", "openai"] = "llama"
    model_path: str = DEFAULT_MODEL_PATH  # llama; relative to the config file's folder
    url: str | None = None  # openai: base URL, e.g. http://127.0.0.1:8080/v1
    model: str = "default"  # openai: the served model's name
    api_key_env: str | None = None  # openai: environment variable holding the API key
    context_tokens: PositiveInt = 4096
    max_tokens: PositiveInt = 256
    deadline_s: PositiveFloat = 60.0  # per simulated call; model loading is not charged to it
    temperature: float = Field(default=0.6, ge=0)
    top_p: float = Field(default=0.95, gt=0, le=1)
    top_k: int = Field(default=20, ge=0)
    seed: int = 0
    threads: PositiveInt | None = None  # llama: CPU threads (default: all cores)
    cached_sessions: PositiveInt = 4  # llama: model contexts, each keeping one session's prompt prefix
    # llama: start the answer with the observation marker, so small models that do
    # not think answer with the observation itself. Turn off for thinking models.
    prefill_observation: bool = True
    demonstrations: int = Field(default=2, ge=0)  # recorded real examples of the same tool per prompt
    initial_state: dict[str, str] = {}  # per server: what the simulated environment contains
    simulation_instruction: dict[str, str] = {}  # per server: controls, e.g. "fail every third call"

    @model_validator(mode="after")
    def _endpoint_needs_url(self) -> WorldModelConfig:
        if self.engine == "openai" and not self.url:
            raise ValueError("engine 'openai' needs url (the server's base URL, e.g. http://127.0.0.1:8080/v1)")
        return self


class ShadowConfig(_Strict):
    rate: float = Field(default=0.0, ge=0.0, le=1.0)  # fraction of real-route calls also simulated off-path
    drain_on_start: bool = True  # complete shadow work left pending by an earlier stop


class ShellLimits(_Strict):
    memory: str = "512m"  # Docker memory limit (swap included)
    cpus: PositiveFloat = 1.0
    pids: PositiveInt = 256  # stops fork bombs inside the sandbox
    workspace_size: str = "512m"  # tmpfs over /workspace
    tmp_size: str = "128m"  # tmpfs over /tmp


class ShellConfig(_Strict):
    """The shell channel: `shell_exec` on simroute's MCP endpoint, backed by a
    hardened Docker sandbox per agent session (real) or the Terminal world model (sim)."""

    enabled: bool = True
    image: str = "simroute-sandbox:latest"  # built by scripts/build-images.sh
    workspace: str | None = None  # folder copied into /workspace at session start; relative to the config file
    network: bool = False  # opt in: the sandbox gets Docker's default bridge network
    pool_size: int = Field(default=2, ge=0)  # pre-started sandboxes: a new session starts without `docker run`
    default_timeout_s: PositiveFloat = 30.0  # per command, when the agent gives none
    max_timeout_s: PositiveFloat = 600.0  # cap on the agent's timeout_s
    screen_lines: PositiveInt = 200  # output kept per command: first and last lines, with a marker between
    screen_chars: PositiveInt = 16000
    limits: ShellLimits = ShellLimits()
    hostname: str = "sandbox"

    def command_timeout(self, requested: Any) -> float:
        """The deadline of one command: the agent's timeout_s, capped; else the default."""
        if isinstance(requested, (int, float)) and not isinstance(requested, bool) and requested > 0:
            return min(float(requested), self.max_timeout_s)
        return self.default_timeout_s


class BrowserConfig(_Strict):
    """The browser channel: playwright-mcp's browser tools on simroute's MCP endpoint,
    backed by Chromium (one context per agent session, real) or the Web world model (sim)."""

    enabled: bool = True
    executable_path: str = "/usr/bin/chromium"  # Debian's Chromium; Playwright's download is not used
    headless: bool = True
    navigation_timeout_s: PositiveFloat = 15.0  # per navigation; the page is shown as loaded so far
    action_timeout_s: PositiveFloat = 5.0  # per click, type, key press, snapshot
    snapshot_max_chars: PositiveInt = 20000  # longer snapshots are cut with a marker
    allowed_domains: list[str] | None = None  # hosts the browser may load (and their subdomains); None: any
    proxy: str | None = None  # HTTP proxy for all the browser's traffic, e.g. simroute's HTTP channel
    ignore_https_errors: bool = False  # e.g. behind an intercepting proxy whose CA Chromium does not trust
    args: list[str] = []  # extra Chromium command-line switches

    @model_validator(mode="after")
    def _proxy_is_a_url(self) -> BrowserConfig:
        if self.proxy is not None and "://" not in self.proxy:
            raise ValueError(f"proxy must be a URL such as http://127.0.0.1:8081, got {self.proxy!r}")
        return self


class HttpConfig(_Strict):
    """The HTTP(S) channel: agents point HTTP_PROXY/HTTPS_PROXY at simroute and every
    request is routed like any other call (`simroute http-proxy`)."""

    enabled: bool = True
    listen_host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    # `regular`: a forward proxy for any host; `reverse:http[s]://host[:port]`: one upstream.
    mode: str = "regular"
    session_header: str = "X-Simroute-Session"  # the agent session of a request; stripped before forwarding
    record_headers: list[str] = ["content-type", "accept"]  # request headers that go into the call (and its key)
    ignore_query: list[str] = []  # query parameters left out of the canonical form (request ids, timestamps)
    ignore_body_fields: list[str] = []  # dotted JSON body fields left out of it; `items.*.id` reaches into lists
    max_body_bytes: PositiveInt = 1_048_576  # recorded body size; larger bodies pass whole, recorded truncated
    timeout_s: PositiveFloat = 60.0  # real route: deadline for the upstream's response headers (then 504)
    ca_dir: str = "~/.simroute"  # simroute's CA for HTTPS interception, created on first need
    ssl_insecure: bool = False  # do not verify upstream certificates (test servers with self-made certificates)
    http2: bool = False  # offer HTTP/2 to clients and upstreams

    @field_validator("mode")
    @classmethod
    def _valid_mode(cls, mode: str) -> str:
        if mode != "regular":
            kind, _, target = mode.partition(":")
            if kind != "reverse" or not target.startswith(("http://", "https://")) or len(target) <= len("https://"):
                raise ValueError(f"must be 'regular' or 'reverse:http[s]://host[:port]', got {mode!r}")
        return mode

    @field_validator("session_header")
    @classmethod
    def _names_a_header(cls, name: str) -> str:
        if not name.strip() or any(ch in name for ch in " :\r\n"):
            raise ValueError(f"must be a header name, got {name!r}")
        return name


class SessionsConfig(_Strict):
    idle_ttl_s: PositiveFloat = 1800.0
    max_open: PositiveInt = 256


class Config(_Strict):
    mode: Route = Route.REAL
    mcp_servers: dict[str, ServerSpec] = Field(default={}, alias="mcpServers")
    servers: dict[str, ServerSpec] = {}  # VS Code's spelling of mcpServers
    rules: list[Any] = []
    replay: ReplayConfig = ReplayConfig()
    store: StoreConfig = StoreConfig()
    sessions: SessionsConfig = SessionsConfig()
    world_model: WorldModelConfig = WorldModelConfig()
    shadow: ShadowConfig = ShadowConfig()
    shell: ShellConfig = ShellConfig()
    browser: BrowserConfig = BrowserConfig()
    http: HttpConfig = HttpConfig()
    call_timeout_s: PositiveFloat = 60.0
    startup_timeout_s: PositiveFloat = 30.0  # an upstream that has not finished its handshake by then failed

    # Set by the loader, not the file.
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)
    source: str = Field(default="<defaults>", exclude=True)

    @model_validator(mode="after")
    def _one_server_table(self) -> Config:
        clash = set(self.mcp_servers) & set(self.servers)
        if clash:
            raise ValueError(f"server {sorted(clash)[0]!r} is defined in both mcpServers and servers")
        for channel in self.local_channels():
            if channel in self.upstreams:
                raise ValueError(f"server name {channel!r} is taken by simroute's {channel} tools: rename the server or set {channel}.enabled: false")
        return self

    def local_channels(self) -> list[str]:
        """Channels whose tools simroute serves itself; each is also the `server` of its calls."""
        return [name for name, section in (("shell", self.shell), ("browser", self.browser)) if section.enabled]

    @property
    def upstreams(self) -> dict[str, ServerSpec]:
        return {**self.mcp_servers, **self.servers}

    @property
    def store_path(self) -> Path:
        path = Path(self.store.path).expanduser()
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

    def may_simulate(self) -> bool:
        """Whether any route of this config can reach the world model."""
        simulating = {Route.SIM, Route.SHADOW}
        return (
            self.mode in simulating
            or any(rule.route in simulating for rule in self.parsed_rules())
            or self.replay.on_miss == "sim"
            or self.shadow.rate > 0
        )

    def may_run_real(self, channel: str) -> bool:
        """Whether any route of this config can send a `channel` call to its real side."""
        reaching = {Route.REAL, Route.SHADOW, Route.REPLAY}  # a replay miss may go real
        if self.mode in reaching:
            return True
        for rule in self.parsed_rules():
            if rule.route in reaching and (rule.channel is None or rule.channel(channel)):
                return True
        return False

    def parsed_rules(self) -> list[Rule]:
        return [parse_rule(rule, index=i) for i, rule in enumerate(self.rules)]

    def http_canonical(self):
        """The canonical form of HTTP call arguments (for keys), from the http section."""
        from shadow.http_canonical import canonical_form

        return canonical_form(ignore_query=self.http.ignore_query, ignore_body_fields=self.http.ignore_body_fields)

    def sim_timeout_for(self, server: str) -> float:
        spec = self.upstreams.get(server)
        return (spec.sim_timeout if spec is not None and spec.sim_timeout else None) or self.world_model.deadline_s

    def timeout_for(self, server: str) -> float:
        spec = self.upstreams.get(server)
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
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark is not None else source
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{where}: invalid YAML: {problem}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}:1: the config must be a mapping of keys (mode, mcpServers, rules, ...)")
    lines = _line_index(root)
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError("\n".join(_describe(err, source, lines) for err in exc.errors())) from exc
    config.base_dir = base_dir or Path.cwd()
    config.source = source
    for i, rule in enumerate(config.rules):
        try:
            parse_rule(rule, index=i)
        except ValueError as exc:
            key, _, problem = str(exc).partition(": ")
            loc: tuple[Any, ...] = ("rules", i, *_split_key(key)) if problem else ("rules", i)
            line = _line_for(loc, lines)
            raise ConfigError(f"{source}:{line}: {_format_loc(loc)}: {problem or exc}") from exc
    return config


def _split_key(key: str) -> tuple[str, ...]:
    # "match.arguments.a.b" -> ("match", "arguments", "a.b"): argument paths stay whole.
    parts = key.split(".")
    if parts[:2] == ["match", "arguments"] and len(parts) > 2:
        return ("match", "arguments", ".".join(parts[2:]))
    return tuple(parts)


def _line_index(node: yaml.Node | None, loc: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], int]:
    """Map every key path in the document to its 1-based line."""
    lines: dict[tuple[Any, ...], int] = {}
    if node is None:
        return lines
    lines[loc] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = (*loc, key_node.value)
            lines.update(_line_index(value_node, child))
            lines[child] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines.update(_line_index(item, (*loc, i)))
    return lines


def _line_for(loc: tuple[Any, ...], lines: dict[tuple[Any, ...], int]) -> int:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return 1


def _format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _describe(error: Any, source: str, lines: dict[tuple[Any, ...], int]) -> str:
    # pydantic adds union member names ("StdioServer") to the location; drop them.
    loc = tuple(p for p in error["loc"] if p not in _UNION_TAGS)
    if loc and loc[0] == "mcp_servers":
        loc = ("mcpServers", *loc[1:])
    line = _line_for(loc, lines)
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        message = "unknown key"
    return f"{source}:{line}: {_format_loc(loc)}: {message}"


_UNION_TAGS = {"stdio", "remote"}
