"""The assembled runtime: config in, engine, sessions, records and upstreams out.

Front doors hold one `Runtime`; it opens its parts in `start()` and closes
them in `aclose()`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time

from backends.browser.pool import BrowserPool
from backends.mcp.upstream import UpstreamPool
from backends.replay import ReplayBackend, namespace_of
from backends.shell.sandboxes import Sandboxes
from backends.world_model.swappable_runner import SwappableRunner
from calls import Call
from records.shared_state.guard_slots import Limits
from records.shared_state.shadow_stream import ShadowStream
from records.store.noise_counts import NoiseRule
from records.store.protocol import ReplaySource
from records.store.record_log import RecordLog
from router.addons.upstream_guard.guard import UpstreamGuard
from router.auth import check_bind, configured_tokens
from router.config import Config
from router.engine.engine import Engine
from router.engine.parts import Deadlines
from router.engine.pin_guard import PinGuard
from router.engine.sessions import SessionRegistry
from router.engine.tool_catalog import ToolCatalog
from router.http.access import SessionCredentials
from router.http.listeners import RoutingParts
from router.runtime.addon_chain import default_addons, shared_slices
from router.runtime.collector import settle_after_start
from router.runtime.deadlines import real_deadline_for, sim_deadline_for
from router.runtime.example_lookup import keyed_lookup
from router.runtime.fork_route import ChannelForks, mcp_forks, shell_forks
from router.runtime.http_proxy import build_proxy
from router.runtime.parts import door_parts
from router.runtime.policy_chain import build_policies, replay_modes, virtual_servers
from router.runtime.replica import replica_presence
from router.runtime.simulated_side import build_model_runner, build_simulator, tools_of
from router.runtime.trace_export import call_tracer, start_export, stop_export
from router.runtime.world_model_adoption import AdoptionFollower
from shadow.noise_learner import NoiseLearner
from shadow.runner import ShadowQueue, ShadowRunner

log = logging.getLogger("simroute.runtime")


class Runtime:
    def __init__(self, config: Config, *, http_channel_port: int | None = None) -> None:
        """`http_channel_port`: serve the HTTP channel (the proxy agents point at) on it
        (0: any free port); None: not served by this runtime."""
        self.config = config
        # Raises AuthConfigError for a bad SIMROUTE_TOKEN; checked again per bind.
        self.tokens = configured_tokens(config.service.tokens)
        location = config.store_location
        self.store = location.open_store()
        # Each kind of shared state, kept here (one router) or in Redis (replicas): chosen once.
        self.shared_state = location.shared_state(self.store)
        self.records = RecordLog(self.store, config.spool_path)
        if http_channel_port is not None:  # refused before anything is built for it
            check_bind(config.http.listen_host, self.tokens, what="the HTTP proxy")
        # Virtual servers have no process and no connection: the pool knows only the real ones.
        self.upstreams = UpstreamPool(config.real_upstreams, connect_timeout_s=config.startup_timeout_s)
        # The shell channel's real side; the Docker engine is reached in start(), not here.
        self.shell = (
            Sandboxes(config.shell, workspace=config.shell_workspace, warm_pool=config.may_run_real("shell"))
            if config.shell.enabled
            else None
        )
        # Each session's forks of its shell and of MCP servers naming local state, reaped with the session.
        self.shell_forks = shell_forks(
            config, self.shell, namespace_of if self.tokens.enabled else lambda session_id: ""
        )
        self.forks = ChannelForks(
            config, self.shell_forks, mcp_forks(config, namespace_of if self.tokens.enabled else lambda s: "")
        )
        self.sessions = SessionRegistry(
            idle_ttl_s=config.sessions.idle_ttl_s,
            max_open=config.sessions.max_open,
            on_close=self._close_session,
        )
        self.replay = ReplayBackend(
            self.store,
            ignore_arguments=config.replay.ignore_arguments,
            canonical={"http": config.http_canonical()},
            source=ReplaySource(config.replay.from_),
            scheme_inputs=config.replay_key_scheme(),
            namespaced=self.tokens.enabled,
            shared_namespaces=config.service.shared_namespaces,
        )
        # Loads on first use (or in the background at start), never charged to a call's deadline;
        # an adopted model (`simroute tune --adopt`) replaces it between calls.
        self.world_model = SwappableRunner(build_model_runner(config))
        self.adoption = AdoptionFollower(config, self.world_model, self.shared_state.adopted_world_model())
        self.examples = keyed_lookup(self.store, self.replay)
        self.simulator = build_simulator(
            config,
            self.store,
            self.world_model,
            self.examples,
            replay=self.replay,
            sessions_shared=self.shared_state.replicas_share_sessions,
        )
        self.shadow_runner = ShadowRunner(
            simulator=self.simulator,
            store=self.store,
            records=self.records,
            deadline_for=functools.partial(sim_deadline_for, config),
            queue_size=config.shadow.queue_size,
            concurrency=config.shadow.concurrency,
            noise=self.store,
            noise_rule=NoiseRule(**config.shadow.noise.model_dump()),
        )
        # Replicas put shadow work on a stream that `simroute worker` processes consume.
        in_process: ShadowQueue = self.shadow_runner
        self.shadow = self.shared_state.shadow_work(in_process, self._stream_shadow_queue)
        self._background: set[asyncio.Task[None]] = set()
        # MCP tool definitions for the safety gate: from the store at start, then every listing.
        self.tool_catalog = ToolCatalog()
        # Keyed digests of credentials (replay keys); loaded with the store.
        self.secret_key: bytes | None = None
        # The learned router (mode: learned, route: learned): its model and statistics
        # are loaded at start and kept fresh by background tasks, never on a call's path.
        self.learned = self._learned_service() if config.uses_learned() else None
        self.noise_learner = NoiseLearner(
            self.store,
            probe_delay_s=config.shadow.noise_probe_delay_s,
            scope=namespace_of if self.tokens.enabled else lambda session_id: "",
        )
        self.shadow_runner.noise_scopes = lambda session_id: self.replay.visible_namespaces(session_id) or ("",)
        # Tool-definition pins: what a changed upstream tool's calls get until a person accepts it.
        self.pins = PinGuard(self.store, policy=config.pins.policy, refresh_s=config.pins.refresh_s)
        # Protects the real side (None: off); a span per call when OTEL_EXPORTER_OTLP_ENDPOINT is set.
        self.guard, self.tracer = self._upstream_guard(), call_tracer()
        self.engine = Engine(
            policies=build_policies(
                config,
                tools_meta=self.tool_catalog.lookup,
                learned=self.learned.policy if self.learned else None,
                holds=[self.pins],
            ),
            records=self.records,
            replay=self.replay,
            replay_modes=replay_modes(config),
            simulator=self.simulator,
            session_state=self._session_state(),
            addons=default_addons(
                config,
                virtual=virtual_servers(config),
                noise=self.noise_learner,
                shadow=self.shadow,
                guard=self.guard,
                tracer=self.tracer,
            ),
            deadlines=Deadlines(
                functools.partial(real_deadline_for, config), functools.partial(sim_deadline_for, config)
            ),
            forks=self.forks,
        )
        self._trace_provider = None  # installed in start() when tracing is on
        if self.tracer is not None:  # the in-process shadow work's spans (shadow/shadow_span.py)
            self.shadow_runner.tracer = self.tracer.tracer
        # simroute's proxy: the HTTP channel (when served) and the browser's only way out,
        # built from the parts it routes with (the engine and sessions, built above).
        parts = RoutingParts(
            engine=self.engine,
            sessions=self.sessions,
            secret_key=lambda: self.secret_key,
            credential_headers=tuple(config.replay.credential_headers),
            ca_dir=config.ca_dir,
            issued=SessionCredentials(user="episode"),
        )
        self.http_credentials = parts.issued  # an episode's HTTP requests name their session with one
        self.proxy, egress = build_proxy(parts, config, http_channel_port, self.tokens)
        # The browser channel's real side; Chromium starts on the first real browser action.
        self.browser = BrowserPool(config.browser, egress=egress) if config.browser.enabled else None
        # One replica of several on a Redis store: its lease, reaping, claims on stateful backends.
        self.replica = replica_presence(config, self.shared_state, self.shell, self.browser, self.upstreams)
        # What the front doors above are handed: the parts they route with.
        self.mcp_parts, self.episode_parts = door_parts(self)

    def _learned_service(self):
        from router.runtime.learned_service import build_learned_service

        def replay_key_of(call: Call) -> str:
            redactor = self.engine.redactor
            return self.replay.keys(redactor.call(call) if redactor is not None else call).replay

        return build_learned_service(
            self.config, self.store, published=self.shared_state.published_models(), replay_key_of=replay_key_of
        )

    def _session_state(self):
        return self.shared_state.session_state(ttl_s=2 * self.config.sessions.idle_ttl_s, loaded=shared_slices())

    def _upstream_guard(self) -> UpstreamGuard | None:
        """The real side's protection: its state shared by the replicas of a Redis store."""
        section = self.config.upstream_guard
        if not section.enabled:
            return None
        return UpstreamGuard(
            state=self.shared_state.guard_slots(),
            limits_for=functools.lru_cache(maxsize=4096)(lambda upstream: Limits(**section.limits_for(upstream))),
        )

    def _stream_shadow_queue(self, stream: ShadowStream) -> ShadowQueue:
        from shadow.worker import StreamShadowQueue

        return StreamShadowQueue(stream, queue_size=self.config.shadow.queue_size, drain_runner=self.shadow_runner)

    async def _close_session(self, session_id: str) -> None:
        """Everything opened for an agent session closes with it."""
        await self.upstreams.close_session(session_id)
        await self.forks.close_session(session_id)  # its shell's and MCP servers' forks
        if self.shell is not None:
            await self.shell.close_session(session_id)
        if self.browser is not None:
            await self.browser.close_session(session_id)

    async def _close_shell(self) -> None:
        assert self.shell is not None
        await asyncio.gather(
            self.shell.aclose(), *([self.shell_forks.aclose()] if self.shell_forks is not None else [])
        )

    async def open_store(self) -> None:
        """The store, ready for this config: migrated, spooled records flushed, records
        of a dead router's unfinished calls marked interrupted, replay keys made under
        another replay configuration recomputed."""
        await self.store.open()
        await self._load_redaction()
        await self.records.start()
        self.replica.interrupt = self.store.interrupt_orphans
        interrupted = await self.store.interrupt_orphans(await self.replica.judge())
        if interrupted:
            log.warning(
                "%d call(s) started by a router that stopped before they finished are marked interrupted", interrupted
            )
        await self.prune()
        rekeyed = await self.store.rekey(self.replay.scheme, self.replay.replay_key_of_row)
        if rekeyed:
            log.info("replay keys of %d record(s) recomputed for the current replay configuration", rekeyed)
        self.examples.loop = asyncio.get_running_loop()

    async def prune(self) -> int:
        """Apply the store's retention (store.max_age, store.max_records)."""
        store = self.config.store
        if store.max_age_s is None and store.max_records is None:
            return 0
        before = time.time() - store.max_age_s if store.max_age_s is not None else None
        pruned = await self.store.prune(before_ts=before, keep_newest=store.max_records)
        if pruned:
            log.info("pruned %d record(s) past the store's retention", pruned)
        return pruned

    async def _load_redaction(self) -> None:
        """The one key (redaction markers and the credential digest in replay keys) and
        the redactor every record, prompt and replay key goes through."""
        from records.redaction import Redactor, redaction_key

        redaction = self.config.redaction
        self.secret_key = await asyncio.to_thread(
            redaction_key, key_env=redaction.key_env, key_file=self.config.redaction_key_file
        )
        redactor = (
            Redactor(
                key=self.secret_key,
                fields=redaction.fields,
                patterns=redaction.patterns,
                observations=redaction.observations,
                password_input=self.browser.is_password_input if self.browser is not None else None,
            )
            if redaction.enabled
            else None
        )
        self.engine.redactor = self.shadow_runner.redactor = redactor

    async def start(self) -> Runtime:
        if self.tracer is not None and self._trace_provider is None:
            self._trace_provider = start_export()
        await self.open_store()
        await self.replica.start()  # after the store: the lease is in it
        for server in self.config.upstreams:  # the gate's MCP annotations, as last listed (a virtual's: declared)
            self.tool_catalog.update(server, tools_of(self.config, self.store, server))
        self.sessions.start()
        if self.learned is not None:
            await self.learned.start()
            if self.config.learned.freeze:  # what it knew at start decides every call (benchmarks, `simroute eval`)
                log.info("learned router: frozen (learned.freeze): no refresh, no reload")
            else:
                self._in_background(self.learned.watch(), "simroute-learned-watch")
                self._in_background(self.learned.refresh_forever(), "simroute-learned-refresh")
            if not self.config.learned.freeze:  # (one router has nothing published to follow: returns at once)
                self._in_background(self.learned.follow_published(), "simroute-learned-published")
        if self.browser is not None and self.config.may_run_real("browser"):
            # Where Chromium will run (asks Docker; `auto` warns now if it falls back to the
            # host), off the start's path: the first browser call waits for it.
            self._in_background(self.browser.prepare(), "simroute-browser-isolation")
        if self.proxy is not None and "http" in {listener.name for listener in self.proxy.listeners.values()}:
            await self.proxy.start()  # the browser's listener alone starts with Chromium
        if self.shell is not None:
            await self.shell.start()
        await self.adoption.start()  # before the model loads: an adopted one in its place
        self._in_background(self.adoption.follow(), "simroute-world-model-adoption")
        if self.config.may_simulate():
            self._in_background(self._preload_world_model(), "simroute-world-model-load")
        # Pending work is drained by a router doing its own shadow work; a stream's, by `simroute worker`.
        in_process = self.shadow is self.shadow_runner
        if self.config.shadow.drain_on_start and in_process and await self.store.pending(limit=1):
            self._in_background(self._drain(), "simroute-shadow-drain")
        settle_after_start()  # the cycle collector's pauses kept off the calls (collector.py)
        return self

    def _in_background(self, work, name: str) -> None:
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _preload_world_model(self) -> None:
        try:
            await self.world_model.start()
        except Exception as exc:  # noqa: BLE001 -- a background task's boundary: reported again, per call, as a sim error observation
            log.error("world model not loaded: %s", exc)
            return
        await self._read_system_prompts_ahead()

    async def _read_system_prompts_ahead(self) -> None:
        """Each MCP server with known tools: its system prompt (the task and the tool
        list, the longest part of a first simulated call's prompt) is read now, at
        background priority, so the process's first session with it starts past it."""
        for server in self.config.upstreams:
            tools = tools_of(self.config, self.store, server)
            if not tools:
                continue
            call = Call("mcp", server, str(tools[0].get("name", "")), {}, "\0read-ahead")
            try:
                tokens = await self.simulator.read_ahead(call, deadline_s=self.config.world_model.deadline_s)
            except Exception as exc:  # noqa: BLE001 -- a background task's boundary (an optimisation): the first call reads the prompt itself
                log.warning("could not read the world model's prompt for %r ahead: %s", server, exc)
            else:
                log.info("world model read the prompt for %r ahead (%d tokens)", server, tokens)

    async def _drain(self) -> None:
        report = await self.shadow.drain()
        log.info("completed %d shadow records left pending by an earlier stop", report.completed)

    async def aclose(self) -> None:
        log.info("stopping")
        self.replica.stopping = True  # its claims stay: another replica says what was lost with it
        # Sandboxes first and alongside the rest: an MCP client that closed stdin
        # terminates this process about 2 s later (their removal starts at once, see
        # Sandboxes.aclose).
        shell_closed = (
            asyncio.get_running_loop().create_task(self._close_shell(), name="simroute-shell-close")
            if self.shell is not None
            else None
        )
        # Shadow work gets a short grace; what does not finish stays pending in the store.
        await self.shadow.aclose(grace_s=self.config.shadow.stop_grace_s)
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.engine.addons.aclose()  # the noise learner's probes first: they call upstreams closed next
        await self.sessions.aclose()
        await asyncio.gather(self.upstreams.aclose(), self.forks.aclose())  # the MCP forks' processes and copies
        if shell_closed is not None:
            await shell_closed
        if self.browser is not None:
            await self.browser.aclose()
        if self.proxy is not None:
            await self.proxy.aclose()
        await self.world_model.aclose()
        await self.replica.aclose()
        await self.records.aclose()
        await self.store.aclose()
        if self._trace_provider is not None:  # the spans still queued, flushed within the exporter's timeout
            await asyncio.to_thread(stop_export, self._trace_provider)
            self._trace_provider = None
        log.info("stopped")

    @property
    def http_port(self) -> int | None:
        """The HTTP channel's port, once started."""
        return self.proxy.ports.get("http") if self.proxy is not None else None

    async def __aenter__(self) -> Runtime:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
