"""The config file's sections the router owns, each a strict pydantic model (unknown
keys are errors): replay, store, shadow, HTTP, redaction, service, sessions, pins
(safety and rehearsal are safety.py's, learned learned.py's, the world model's
world_model.py's). Each field's description is the configuration reference's text.
`router/config/root.py` holds the root, the checks and the loading."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt, field_validator, model_validator

from backends.options import Strict
from records.secret_patterns import CREDENTIAL_FIELDS


class ReplayConfig(Strict):
    """VCR-style record modes (see router/engine/replay_modes.py)."""

    on_miss: Literal["real", "sim", "error"] | None = Field(
        default=None, description="What every replay miss does; unset: per `record_mode`."
    )
    record_mode: Literal["once", "new_episodes", "none", "all"] = Field(
        default="new_episodes",
        description="VCR record mode: `new_episodes`, `none`, `once` or `all` (see Records and replay).",
    )
    recording: str | None = Field(
        default=None, min_length=1, description="Tag the sessions recorded now with this name."
    )
    from_: str | None = Field(
        default=None, alias="from", min_length=1, description="Replay from this named recording, not the last session."
    )
    ignore_arguments: list[str] = Field(
        default=[], description="Dotted argument paths left out of the replay key; `*` steps into lists."
    )
    credential_headers: list[str] = Field(
        default=["authorization", "cookie", "proxy-authorization", "x-api-key", "api-key", "x-auth-token"],
        description="HTTP request headers whose values enter the replay key as a keyed digest.",
    )

    @model_validator(mode="after")
    def _modes_agree(self) -> ReplayConfig:
        contradictions = {
            ("none", "real"),
            ("none", "sim"),
            ("new_episodes", "error"),
            ("all", "error"),
            ("all", "sim"),
        }
        if "record_mode" in self.model_fields_set and (self.record_mode, self.on_miss) in contradictions:
            raise ValueError(f"on_miss {self.on_miss!r} contradicts record_mode {self.record_mode!r}: set one of them")
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

    kind: Literal["sqlite"] | None = Field(
        default=None, description="Accepted for older configs; the url says the kind."
    )
    url: str | None = Field(
        default=None,
        description="Instead of `path`: `sqlite:///relative`, `sqlite:////absolute`, `redis://host:port/db`.",
    )
    path: str = Field(
        default=".simroute/records.db", description="The SQLite record store; relative to the config file's folder."
    )
    synchronous: Literal["normal", "full"] = Field(
        default="normal", description="`normal`: records survive a crash; `full`: power loss too."
    )
    busy_timeout_ms: PositiveInt = Field(
        default=100, description="A record not committed within this goes to the fsynced spool."
    )
    max_log: PositiveInt = Field(
        default=1_000_000, description="Redis: the record event stream's retention cap (entries, approximate)."
    )
    max_age: str | None = Field(
        default=None, description="Retention: records older than this (`30d`, `12h`, `90m`, `3600s`) go."
    )
    max_records: PositiveInt | None = Field(
        default=None, description="Retention: records beyond the newest this many go."
    )

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
            from records.store.redis.base import parse_redis_url

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


class NoiseConfig(Strict):
    """When a path is noise for a tool: real-vs-real pairs of the same call disagree
    there with a Wilson lower bound (confidence `z`) of at least `min_rate`, over at
    least `min_pairs` pairs."""

    min_pairs: PositiveInt = Field(
        default=3, description="Real-vs-real pairs of a call needed before a path can be noise."
    )
    min_rate: float = Field(
        default=0.5, gt=0.0, le=1.0, description="Lower bound of the disagreement rate at which a path is noise."
    )
    z: float = Field(default=1.0, ge=0.0, description="Confidence of the Wilson lower bound (`0`: the plain rate).")
    builtin_detectors: bool = Field(
        default=True, description="Timestamps, uuids, hashes, ids, durations, sizes: noise from call one."
    )


class ShadowConfig(Strict):
    rate: float = Field(
        default=0.0, ge=0.0, le=1.0, description="Fraction of real-route calls also simulated off the agent's path."
    )
    drain_on_start: bool = Field(default=True, description="Complete shadow work an earlier stop left pending.")
    queue_size: PositiveInt = Field(
        default=256, description="Shadow work waiting at most; past it, shadow work is skipped (and said so)."
    )
    concurrency: PositiveInt = Field(
        default=1, description="Shadow simulations running at once; a session's shadow work runs in order."
    )
    stop_grace_s: float = Field(
        default=1.0, ge=0.0, description="At stop, shadow work still running gets this long, then stays pending."
    )
    claim_after_s: PositiveFloat = Field(
        default=60.0, description="Redis: a shadow job held this long is claimed by another worker."
    )
    noise: NoiseConfig = Field(default=NoiseConfig(), description="When a path of a tool's answers counts as noise.")
    noise_probe_rate: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Fraction of known read-only real calls made once more to teach the noise table.",
    )
    noise_probe_delay_s: float = Field(
        default=1.0, ge=0.0, le=60.0, description="A noise probe waits this long after the first call."
    )


class HttpConfig(Strict):
    """The HTTP(S) channel: agents point HTTP_PROXY/HTTPS_PROXY at simroute and every
    request is routed like any other call (`simroute http-proxy`)."""

    enabled: bool = Field(
        default=True, description="The HTTP channel (`simroute http-proxy` refuses to start without it)."
    )
    listen_host: str = Field(
        default="127.0.0.1", description="Where `simroute http-proxy` and `simroute serve` listen."
    )
    port: int = Field(
        default=8080,
        ge=0,
        le=65535,
        description="The proxy's port (`--port`/`--http-proxy` override; `0`: any free port).",
    )
    mode: str = Field(
        default="regular", description="`regular`: a forward proxy; `reverse:http[s]://host[:port]`: one upstream."
    )
    session_header: str = Field(
        default="X-Simroute-Session", description="The request header naming the agent session (then removed)."
    )
    record_headers: list[str] = Field(
        default=["content-type", "accept"], description="Request headers that go into the call and its key."
    )
    ignore_query: list[str] = Field(
        default=[], description="Query parameters left out of the canonical form (replay keys)."
    )
    ignore_body_fields: list[str] = Field(
        default=[], description="Dotted JSON body fields left out of it; `items.*.id` reaches lists."
    )
    max_body_bytes: PositiveInt = Field(
        default=1_048_576, description="Body bytes recorded; larger bodies pass whole, recorded cut."
    )
    max_request_bytes: PositiveInt = Field(
        default=32 * 1024 * 1024, description="Larger request bodies get `413` before routing."
    )
    max_decoded_bytes: PositiveInt = Field(
        default=64 * 1024 * 1024, description="Decoding stops here or at 100× the compressed size."
    )
    timeout_s: PositiveFloat = Field(
        default=60.0,
        description="Real route: the upstream's answer (a stream: its headers) is due by then, else `504`.",
    )
    tunnel_first_bytes_s: float = Field(
        default=2.5, gt=0, le=300, description="After `CONNECT`, a client silent this long makes the tunnel raw TCP."
    )
    ca_dir: str = Field(
        default="~/.simroute", description="simroute's CA for HTTPS interception, created on first need."
    )
    ssl_insecure: bool = Field(
        default=False, description="Do not verify upstream certificates (test servers with self-made certificates)."
    )
    http2: bool = Field(default=False, description="Offer HTTP/2 to clients and upstreams (HTTP/1.1 otherwise).")

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

    enabled: bool = Field(default=True, description="Replace secrets by `[redacted:<keyed hash>]`.")
    fields: list[str] = Field(
        default=list(CREDENTIAL_FIELDS),
        description="Names of fields, headers, cookies, query parameters holding credentials.",
    )
    patterns: list[str] = Field(
        default=[], description="Extra regular expressions of secrets in any text (group 1, if any: the secret)."
    )
    observations: bool = Field(default=True, description="Redact observations too, not only calls.")
    key_env: str | None = Field(
        default="SIMROUTE_REDACTION_KEY", description="The environment variable holding the HMAC key."
    )
    key_file: str | None = Field(
        default=None, description="Else this file (relative to the config); unset: `redaction.key` by the store."
    )

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

    tokens: dict[str, str] = Field(
        default={}, description="Named tokens (`name: token`, 16+ characters); with any, HTTP clients need one."
    )
    allowed_hosts: list[str] = Field(
        default=[], description="`Host` values the MCP endpoint accepts beyond loopback and its bind address."
    )
    allowed_origins: list[str] = Field(
        default=[], description="Browser `Origin`s the MCP endpoint accepts beyond loopback and its own."
    )
    shared_namespaces: list[str] = Field(
        default=[],
        description=(
            "Token names whose recordings every token may use after its own (replay, world-model examples, learned "
            "statistics, noise, the dashboard): e.g. a CI token's golden "
            "recordings. Any other token's records never reach another token."
        ),
    )

    operator_tokens: list[str] = Field(
        default=[],
        description=(
            "Token names whose dashboard and /metrics show every namespace "
            "(an operator's; a lone token does too); any other token sees "
            "only its own records and the shared namespaces'."
        ),
    )

    @field_validator("shared_namespaces", "operator_tokens")
    @classmethod
    def _namespace_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name or any(ch in name for ch in "/: \t"):
                raise ValueError(f"a namespace is a token name (a word without '/', ':' or spaces), got {name!r}")
        return names

    @field_validator("tokens")
    @classmethod
    def _strong_tokens(cls, tokens: dict[str, str]) -> dict[str, str]:
        for name, token in tokens.items():
            if not name or any(ch in name for ch in "/: \t"):
                raise ValueError(f"a token name is a word without '/', ':' or spaces, got {name!r}")
            if len(token) < 16:
                raise ValueError(
                    f"token {name!r} is shorter than 16 characters: use a random one (e.g. `openssl rand -hex 24`)"
                )
        if len(set(tokens.values())) != len(tokens):
            raise ValueError("two token names share one token: each needs its own")
        return tokens


class SessionsConfig(Strict):
    idle_ttl_s: PositiveFloat = Field(
        default=1800.0, description="Close agent sessions idle this long, with their upstreams."
    )
    max_open: PositiveInt = Field(
        default=256, description="Cap on open agent sessions; past it a new session's calls get a clear error."
    )
    replica_lease_s: float = Field(
        default=15.0,
        ge=1.0,
        description="Redis store: a replica's lease (renewed every third); past it, live replicas reap what it left.",
    )


class PinsConfig(Strict):
    """Tool-definition pins: each upstream tool's definition is pinned on first sight; a
    later listing that changes it is recorded, and the agent keeps seeing the pinned one."""

    policy: Literal["warn", "block", "rehearse"] = Field(
        default="warn",
        description="What a changed tool's calls get until `simroute pins accept`: `warn` (recorded and shown), "
        "`block` (refused), `rehearse` (every call to its server simulated).",
    )
    refresh_s: PositiveFloat = Field(
        default=1.0, description="How often a router reads back changes accepted elsewhere (seconds)."
    )
