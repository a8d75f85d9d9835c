"""The config file's sections below the root, each a strict pydantic model
(unknown keys are errors): MCP servers, replay, store, world model, shadow,
sessions, and simroute's own channels (shell, browser, HTTP). `router/config.py`
holds the root, the cross-section checks and the loading."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, PositiveFloat, PositiveInt, Tag, field_validator, model_validator


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class StdioServer(Strict):
    command: str = Field(min_length=1)
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    timeout: PositiveFloat | None = None  # real-call deadline (s); default: call_timeout_s
    sim_timeout: PositiveFloat | None = None  # simulated-call deadline (s); default: world_model.deadline_s
    type: Literal["stdio"] | None = None  # VS Code's form names the transport


class RemoteServer(Strict):
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


class ReplayConfig(Strict):
    on_miss: Literal["real", "sim", "error"] = "real"
    # Dotted argument paths left out of the replay key (request ids, timestamps).
    ignore_arguments: list[str] = []


class StoreConfig(Strict):
    kind: Literal["sqlite"] = "sqlite"
    # Relative paths are relative to the config file's folder.
    path: str = ".simroute/records.db"
    # normal: a committed record survives a crash of simroute; full: also power loss.
    synchronous: Literal["normal", "full"] = "normal"


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
    demonstrations: int = Field(default=2, ge=0)  # recorded real examples of the same tool per prompt
    initial_state: dict[str, str] = {}  # per server: what the simulated environment contains
    simulation_instruction: dict[str, str] = {}  # per server: controls, e.g. "fail every third call"

    @model_validator(mode="after")
    def _endpoint_needs_url(self) -> WorldModelConfig:
        if self.engine == "openai" and not self.url:
            raise ValueError("engine 'openai' needs url (the server's base URL, e.g. http://127.0.0.1:8080/v1)")
        return self


class ShadowConfig(Strict):
    rate: float = Field(default=0.0, ge=0.0, le=1.0)  # fraction of real-route calls also simulated off-path
    drain_on_start: bool = True  # complete shadow work left pending by an earlier stop


class ShellLimits(Strict):
    memory: str = "512m"  # Docker memory limit (swap included)
    cpus: PositiveFloat = 1.0
    pids: PositiveInt = 256  # stops fork bombs inside the sandbox
    workspace_size: str = "512m"  # tmpfs over /workspace
    tmp_size: str = "128m"  # tmpfs over /tmp


class ShellConfig(Strict):
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


class BrowserConfig(Strict):
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


class SessionsConfig(Strict):
    idle_ttl_s: PositiveFloat = 1800.0
    max_open: PositiveInt = 256
