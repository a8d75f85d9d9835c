"""The config file's sections below the root, each a strict pydantic model
(unknown keys are errors): MCP servers, replay, store, world model, shadow,
redaction, sessions, and simroute's own channels (shell, browser, HTTP). `router/config.py`
holds the root, the cross-section checks and the loading."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, PositiveFloat, PositiveInt, field_validator, model_validator

from backends.options import Strict
from shadow.secret_patterns import CREDENTIAL_FIELDS


class ReplayConfig(Strict):
    """VCR-style record modes (see router/engine/replay_modes.py)."""

    # What a miss does: `real`, `sim` or `error`; unset: decided by record_mode.
    on_miss: Literal["real", "sim", "error"] | None = None
    record_mode: Literal["once", "new_episodes", "none", "all"] = "new_episodes"
    recording: str | None = Field(default=None, min_length=1)  # tag sessions recorded now with this name
    from_: str | None = Field(default=None, alias="from", min_length=1)  # replay from this named recording
    # Dotted argument paths left out of the replay key (request ids, timestamps).
    ignore_arguments: list[str] = []
    # Request headers whose values (as a keyed digest) are part of an HTTP call's replay
    # key: one user's recorded answer is never replayed to another.
    credential_headers: list[str] = ["authorization", "cookie", "proxy-authorization", "x-api-key", "api-key", "x-auth-token"]

    @model_validator(mode="after")
    def _modes_agree(self) -> ReplayConfig:
        contradictions = {("none", "real"), ("none", "sim"), ("new_episodes", "error"), ("all", "error"), ("all", "sim")}
        if "record_mode" in self.model_fields_set and (self.record_mode, self.on_miss) in contradictions:
            raise ValueError(
                f"on_miss {self.on_miss!r} contradicts record_mode {self.record_mode!r}: set one of them"
            )
        return self


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str | float) -> float:
    """Seconds of `30d`, `12h`, `90m`, `3600s` or a plain number of seconds."""
    value = str(text).strip()
    unit = value[-1:] if value[-1:] in _UNITS else "s"
    number = value[:-1] if value[-1:] in _UNITS else value
    try:
        seconds = float(number) * _UNITS[unit]
    except ValueError:
        raise ValueError(f"expected a duration such as 30d, 12h, 90m or 3600s, got {text!r}") from None
    if seconds <= 0:
        raise ValueError(f"a duration must be positive, got {text!r}")
    return seconds


class StoreConfig(Strict):
    """Where records live: SQLite (embedded; `path`, or `url: sqlite:///relative` /
    `sqlite:////absolute`) or Redis (`url: redis://host:port/db`, shared by replicas)."""

    kind: Literal["sqlite"] | None = None  # accepted for older configs; the url says the kind
    url: str | None = None
    # Relative paths are relative to the config file's folder.
    path: str = ".simroute/records.db"
    # normal: a committed record survives a crash of simroute; full: also power loss.
    synchronous: Literal["normal", "full"] = "normal"
    # A record the store cannot commit within this (another process holds the write
    # lock) goes to the fsynced spool and the call proceeds.
    busy_timeout_ms: PositiveInt = 100
    # Redis: the record event stream's retention cap (entries, approximate).
    max_log: PositiveInt = 1_000_000
    # Retention (`simroute prune`, and at each start): records older than this
    # (`30d`, `12h`, `90m`, `3600s` or seconds) and beyond the newest max_records go;
    # named recordings and unfinished records stay.
    max_age: str | None = None
    max_records: PositiveInt | None = None

    @field_validator("max_age")
    @classmethod
    def _a_duration(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @property
    def max_age_s(self) -> float | None:
        return parse_duration(self.max_age) if self.max_age is not None else None

    @model_validator(mode="after")
    def _one_location(self) -> StoreConfig:
        if self.url is None:
            return self
        if "path" in self.model_fields_set:
            raise ValueError("give either url or path, not both")
        scheme = self.url.partition("://")[0]
        if scheme == "sqlite":
            if not self.url.startswith("sqlite:///") or len(self.url) <= len("sqlite:///"):
                raise ValueError(f"url: expected sqlite:///relative/path or sqlite:////absolute/path, got {self.url!r}")
        elif scheme in ("redis", "rediss"):
            from shadow.store.redis.store import parse_redis_url

            parse_redis_url(self.url)
        else:
            raise ValueError(f"url: {self.url!r} is neither sqlite:///… nor redis://host:port/db")
        return self

    @property
    def redis_url(self) -> str | None:
        return self.url if self.url is not None and self.url.startswith(("redis://", "rediss://")) else None

    @property
    def sqlite_path(self) -> str:
        if self.url is not None and self.url.startswith("sqlite:///"):
            return self.url[len("sqlite:///") :]
        return self.path


DEFAULT_MODEL_PATH = "~/.cache/simroute/models/SmolLM2-135M-Instruct.Q4_1.gguf"


class WorldModelConfig(Strict):
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
    # llama: a llama-cpp-python registered chat format (chatml, llama-2, gemma, …) for a
    # GGUF file without a chat template in its metadata; unset: the file's own template.
    chat_format: str | None = None
    # How an MCP server's tools are listed to the model: `json`, the full definitions
    # (the layout Qwen-AgentWorld was trained on); `signatures`, one line per tool
    # (name, parameters, description), for small models that the long schemas
    # distract; `auto`: signatures in-process (llama), json on an endpoint.
    tool_list: Literal["auto", "json", "signatures"] = "auto"
    demonstrations: int = Field(default=2, ge=0)  # recorded real examples of the same tool per prompt
    initial_state: dict[str, str] = {}  # per server: what the simulated environment contains
    simulation_instruction: dict[str, str] = {}  # per server: controls, e.g. "fail every third call"

    @field_validator("chat_format")
    @classmethod
    def _a_registered_format(cls, value: str | None) -> str | None:
        """A misspelt format is a config error at load, not a failure at the first simulated call."""
        if value is None:
            return value
        try:
            import llama_cpp.llama_chat_format  # noqa: F401  (the optional gguf extra)
        except ImportError:
            return value  # no in-process engine here: nothing to check the name against
        from backends.world_model.chat_formats import chat_format_problem

        problem = chat_format_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _endpoint_needs_url(self) -> WorldModelConfig:
        if self.engine == "openai" and not self.url:
            raise ValueError("engine 'openai' needs url (the server's base URL, e.g. http://127.0.0.1:8080/v1)")
        return self


class NoiseConfig(Strict):
    """When a path is noise for a tool: real-vs-real pairs of the same call disagree
    there with a Wilson lower bound (confidence `z`) of at least `min_rate`, over at
    least `min_pairs` pairs."""

    min_pairs: PositiveInt = 3
    min_rate: float = Field(default=0.5, gt=0.0, le=1.0)
    z: float = Field(default=1.0, ge=0.0)
    builtin_detectors: bool = True  # timestamps, uuids, request ids, durations, sizes: noise from the first call


class ShadowConfig(Strict):
    rate: float = Field(default=0.0, ge=0.0, le=1.0)  # fraction of real-route calls also simulated off-path
    drain_on_start: bool = True  # complete shadow work left pending by an earlier stop
    queue_size: PositiveInt = 256  # shadow work waiting at most; past it, shadow work is skipped (and said so)
    concurrency: PositiveInt = 1  # shadow simulations running at once
    stop_grace_s: float = Field(default=1.0, ge=0.0)  # at stop, shadow work still running gets this long, then stays pending
    claim_after_s: PositiveFloat = 60.0  # Redis: a shadow job a worker held this long is claimed by another worker
    noise: NoiseConfig = NoiseConfig()
    # Fraction of real calls known read-only (MCP readOnlyHint and safety class safe;
    # HTTP is not probed) made a second time off the agent's path to teach the noise table.
    noise_probe_rate: float = Field(default=0.0, ge=0.0, le=1.0)
    noise_probe_delay_s: float = Field(default=1.0, ge=0.0, le=60.0)  # the probe waits this long: a clock in seconds has moved


class HttpConfig(Strict):
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
    max_request_bytes: PositiveInt = 32 * 1024 * 1024  # larger request bodies get 413 before routing
    # Decoding a compressed body (for the record, the keys, the world model) stops here,
    # or at 100 times the compressed size, whichever comes first; the record says so.
    max_decoded_bytes: PositiveInt = 64 * 1024 * 1024
    timeout_s: PositiveFloat = 60.0  # real route: deadline for the upstream's response headers (then 504)
    # After a CONNECT, a client silent this long is taken for a protocol where the server
    # speaks first (SMTP, SSH): the tunnel is routed as raw TCP (refused unless a rule opens it).
    tunnel_first_bytes_s: float = Field(default=2.5, gt=0, le=300)
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


class RedactionConfig(Strict):
    """Secrets replaced by `[redacted:<keyed hash>]` before records, spool lines, logs
    and simulation prompts see them."""

    enabled: bool = True
    # Field, header, cookie and query parameter names that hold credentials (whole-word
    # match: `token` covers `github_token` and `X-Auth-Token`, not `max_tokens`).
    fields: list[str] = list(CREDENTIAL_FIELDS)
    patterns: list[str] = []  # extra regular expressions of secrets in any text (group 1, if any, is the secret)
    observations: bool = True  # redact observations too, not only calls
    key_env: str | None = "SIMROUTE_REDACTION_KEY"  # environment variable holding the HMAC key
    key_file: str | None = None  # else this file (relative to the config file); default: redaction.key beside the store

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {pattern!r}: {exc}") from exc
        return patterns


class ServiceConfig(Strict):
    """Who may talk to simroute over the network (MCP over HTTP, the HTTP proxy)."""

    # Named tokens (name: token). With any token (here or SIMROUTE_TOKEN), MCP over HTTP
    # needs `Authorization: Bearer TOKEN` and the proxy `Proxy-Authorization` session:TOKEN;
    # a session id lives in its token's namespace. Binds beyond loopback need one.
    tokens: dict[str, str] = {}
    allowed_hosts: list[str] = []  # Host header values the MCP endpoint accepts beyond loopback names
    allowed_origins: list[str] = []  # browser Origins the MCP endpoint accepts beyond loopback ones

    @field_validator("tokens")
    @classmethod
    def _strong_tokens(cls, tokens: dict[str, str]) -> dict[str, str]:
        for name, token in tokens.items():
            if not name or any(ch in name for ch in "/: \t"):
                raise ValueError(f"a token name is a word without '/', ':' or spaces, got {name!r}")
            if len(token) < 16:
                raise ValueError(f"token {name!r} is shorter than 16 characters: use a random one (e.g. `openssl rand -hex 24`)")
        if len(set(tokens.values())) != len(tokens):
            raise ValueError("two token names share one token: each needs its own")
        return tokens


class SessionsConfig(Strict):
    idle_ttl_s: PositiveFloat = 1800.0
    max_open: PositiveInt = 256


SafetyClassName = Literal["safe", "side_effect", "destructive"]


class SafetyConfig(Strict):
    """The safety gate: every call is classed safe, side_effect or destructive."""

    max_command_chars: PositiveInt = 10_000  # longer shell command lines are not parsed, and never safe
    trusted_servers: list[str] = []  # MCP servers whose tool annotations may also make a call safer
    production_hosts: list[str] = []  # HTTP hosts (globs; a domain covers its subdomains) where any write is destructive
    sensitive_domains: list[str] = []  # sites where submitting, buying, deleting… in the browser is destructive
    http_safe_methods: list[str] = ["GET", "HEAD", "OPTIONS"]  # HTTP methods that read
    tools: dict[str, dict[str, SafetyClassName]] = {}  # per server (glob), per tool (glob): the class, overriding the classifier

    def settings(self):
        from policies.safety import SafetySettings
        from policies.safety.verdict import SafetyClass

        return SafetySettings(
            max_command_chars=self.max_command_chars,
            trusted_servers=tuple(self.trusted_servers),
            production_hosts=tuple(self.production_hosts),
            sensitive_domains=tuple(self.sensitive_domains),
            http_safe_methods=frozenset(m.upper() for m in self.http_safe_methods),
            tools=tuple((server, tool, SafetyClass(cls)) for server, tools in self.tools.items() for tool, cls in tools.items()),
        )


class RehearsalConfig(Strict):
    """Rehearsal: calls whose class is diverted on their channel never reach the real side."""

    enabled: bool = False
    on_divert: Literal["sim", "deny"] = "sim"
    # Per channel, the classes diverted; a channel left out keeps its default
    # (shell: destructive; mcp, http, browser: side_effect and destructive).
    divert: dict[Literal["shell", "mcp", "http", "browser"], list[SafetyClassName]] = {}
    allow: list[Any] = []  # rules that run before the gate (e.g. `rm -rf build/` may run for real)


class LearnedConfig(Strict):
    """The learned router (`mode: learned`, a rule's `route: learned`)."""

    model: str = ".simroute/router.skops"  # relative to the config folder
    max_divergence: float = Field(default=0.2, ge=0.0, le=1.0)  # a sim label is acceptable at or below it
    target_fidelity: float = Field(default=0.9, gt=0.0, le=1.0)  # `simroute train` picks thresholds for it
    min_labels: PositiveInt = 20  # per tool and route; below it the per-tool estimate decides
    prior_confidence: float = Field(default=0.8, gt=0.0, lt=1.0)  # of the per-tool estimate's lower bound
    explore_rate: float = Field(default=0.05, ge=0.0, le=1.0)
    latency_weight: float = Field(default=0.1, ge=0.0)  # cost per second of expected latency
    sim_price: float = Field(default=0.1, ge=0.0)
    simulate_side_effects: bool = False  # let calls not classed safe leave the real side
    refresh_s: PositiveFloat = 30.0  # per-tool statistics and recorded replay keys refreshed this often
    watch_s: PositiveFloat = 1.0  # the model file is checked for a new model this often
    max_records: PositiveInt = 50_000  # newest records read for training and statistics
