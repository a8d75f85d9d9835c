"""What the runtime hands each front door above it: the parts it routes with, never
the runtime itself (as `RoutingParts`, router/http/listeners.py, for the HTTP channel).

`McpParts`: the MCP front door (router/mcp). `EpisodeParts`: the episodes
(router/episodes), which step through the MCP front door's per-call work and so get its
parts, plus the shared episode rows, the learned router's policy and the HTTP
channel an episode's `http_request` goes through. Built by `Runtime`
(router/runtime/runtime.py); a front door imports these types, never `Runtime`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from backends.browser.pool import BrowserPool
from backends.mcp.upstream import UpstreamPool
from backends.shell.sandboxes import Sandboxes
from policies.learned import LearnedPolicy
from records.shared_state.answers import IdempotentAnswers, LocalAnswers
from records.shared_state.episode_rows import EpisodeRows, LocalEpisodeRows
from records.store.protocol import RecordStore
from router.auth import Tokens
from router.config import Config
from router.engine.engine import Engine
from router.engine.pin_guard import PinGuard
from router.engine.sessions import SessionRegistry
from router.engine.tool_catalog import ToolCatalog
from router.http.access import SessionCredentials
from router.runtime.replica import ReplicaPresence

if TYPE_CHECKING:  # the learned router's service is imported when it is used
    from records.shared_state.deployment import SharedState
    from router.runtime.learned_service import LearnedService


class Lifecycle(Protocol):
    """What a front door opens when it starts serving and closes when it stops (the runtime)."""

    async def start(self) -> Any: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class McpParts:
    config: Config
    engine: Engine  # decides, serves and records every call
    sessions: SessionRegistry  # the agent sessions, shared with the other channels
    upstreams: UpstreamPool  # the real MCP servers' sessions, kept warm per agent session
    store: RecordStore  # tool snapshots (listings without the upstream), records
    tool_catalog: ToolCatalog  # the safety gate's MCP annotations, updated by every listing
    pins: PinGuard  # tool-definition pins: holds and notes
    tokens: Tokens  # who may use the MCP endpoint over HTTP
    replica: ReplicaPresence  # this replica: its identity, whether another one's owner lives
    lifecycle: Lifecycle  # opened when the server starts, closed when it stops
    # Answers by idempotency key: in the session (one router), or across replicas (a Redis store).
    keyed_answers: IdempotentAnswers = field(default_factory=LocalAnswers)
    tracing: bool = False  # a span per call (the record annotates the request's span)
    shell: Sandboxes | None = None  # the shell channel's real side (simroute's shell tools)
    browser: BrowserPool | None = None  # the browser channel's real side (simroute's browser tools)


@dataclass(frozen=True, slots=True)
class HttpChannel:
    """simroute's HTTP channel as an episode's `http_request` reaches it: the proxy's port
    (known once it started; None: not served) and the credentials it issues episodes."""

    port: Callable[[], int | None]
    credentials: SessionCredentials | None


@dataclass(frozen=True, slots=True)
class EpisodeParts:
    mcp: McpParts  # an episode's steps take the MCP front door's per-call work, in process
    http: HttpChannel
    # The rows another replica takes an episode over from (kept in Redis with a Redis store).
    episode_rows: EpisodeRows = field(default_factory=LocalEpisodeRows)
    learned: LearnedPolicy | None = None  # the learned router's policy, when it runs (an episode's route may name it)


class Assembly(Lifecycle, Protocol):
    """What the parts are taken from: the runtime that assembles them (router/runtime/runtime.py)."""

    config: Config
    engine: Engine
    sessions: SessionRegistry
    upstreams: UpstreamPool
    shared_state: SharedState
    tool_catalog: ToolCatalog
    pins: PinGuard
    tokens: Tokens
    replica: ReplicaPresence
    shell: Sandboxes | None
    browser: BrowserPool | None
    learned: LearnedService | None
    http_credentials: SessionCredentials | None

    # Read-only here: the runtime's own are of narrower types (its store, its tracer).
    @property
    def store(self) -> RecordStore: ...

    @property
    def tracer(self) -> object | None: ...

    @property
    def http_port(self) -> int | None: ...


def door_parts(runtime: Assembly) -> tuple[McpParts, EpisodeParts]:
    """The parts of `runtime` each front door above it is handed."""
    config = runtime.config
    kept_s = max(86400.0, 2 * config.episodes.idle_ttl_s)  # answers and ended episodes stay readable a day
    mcp = McpParts(
        config,
        runtime.engine,
        runtime.sessions,
        runtime.upstreams,
        runtime.store,
        runtime.tool_catalog,
        runtime.pins,
        runtime.tokens,
        runtime.replica,
        lifecycle=runtime,
        keyed_answers=runtime.shared_state.answers(
            ttl_s=kept_s, replica=runtime.replica.identity, alive=runtime.replica.judge
        ),
        tracing=runtime.tracer is not None,
        shell=runtime.shell,
        browser=runtime.browser,
    )
    episodes = EpisodeParts(
        mcp,
        HttpChannel(port=lambda: runtime.http_port, credentials=runtime.http_credentials),
        episode_rows=runtime.shared_state.episode_rows(ttl_s=kept_s),
        learned=runtime.learned.policy if runtime.learned is not None else None,
    )
    return mcp, episodes
