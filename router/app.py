"""The assembled runtime: config in, engine, sessions, records and upstreams out.

Front doors hold one `Runtime`; it opens its parts in `start()` and closes
them in `aclose()`.
"""

from __future__ import annotations

import asyncio
import logging

from backends.browser.pool import BrowserPool
from backends.mcp_upstream import UpstreamPool
from backends.shell.sandboxes import Sandboxes
from backends.replay import ReplayBackend
from policies import default_policies
from router.config import Config
from router.engine import Engine
from router.sessions import SessionRegistry
from router.types import Call
from router.world import build_engine, build_simulator
from shadow.runner import ShadowRunner
from shadow.spool import SpoolingWriter
from shadow.sqlite_store import SQLiteStore, StoreError

log = logging.getLogger("simroute.runtime")


class Runtime:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.store = SQLiteStore(config.store_path, synchronous=config.store.synchronous)
        self.upstreams = UpstreamPool(config.upstreams, connect_timeout_s=config.startup_timeout_s)
        # The shell channel's real side; the Docker engine is reached in start(), not here.
        self.shell = (
            Sandboxes(config.shell, workspace=config.shell_workspace, warm_pool=config.may_run_real("shell"))
            if config.shell.enabled
            else None
        )
        # The browser channel's real side; Chromium starts on the first real browser action.
        self.browser = BrowserPool(config.browser) if config.browser.enabled else None
        self.sessions = SessionRegistry(
            idle_ttl_s=config.sessions.idle_ttl_s,
            max_open=config.sessions.max_open,
            on_close=self._close_session,
        )
        # The world model loads on first use (or in the background at start when a
        # route can reach it); loading is never charged to a call's deadline.
        self.world_model = build_engine(config)
        self.simulator = build_simulator(config, self.store, self.world_model)
        self.shadow = ShadowRunner(simulator=self.simulator, store=self.store, deadline_for=self._sim_deadline_for)
        self._background: set[asyncio.Task[None]] = set()
        self.engine = Engine(
            policies=default_policies(rules=config.parsed_rules(), mode=config.mode),
            records=SpoolingWriter(self.store, config.store_path.with_suffix(".spool.jsonl"), errors=(StoreError,)),
            replay=ReplayBackend(
                self.store, ignore_arguments=config.replay.ignore_arguments, canonical={"http": config.http_canonical()}
            ),
            replay_on_miss=config.replay.on_miss,
            simulator=self.simulator,
            shadow=self.shadow,
            shadow_rate=config.shadow.rate,
            deadline_for=self._deadline_for,
            sim_deadline_for=self._sim_deadline_for,
        )

    def _deadline_for(self, call: Call) -> float:
        if call.channel == "shell":
            # The command's own deadline answers first (with partial output); this
            # outer one leaves room to open a sandbox and only stops a stuck engine.
            return self.config.shell.command_timeout(call.arguments.get("timeout_s")) + 60.0
        if call.channel == "browser":
            # The browser's own deadlines answer first, with the page as far as it got;
            # this one leaves room to launch Chromium.
            browser = self.config.browser
            return browser.navigation_timeout_s + 2 * browser.action_timeout_s + 60.0
        if call.channel == "http":
            return self.config.http.timeout_s
        return self.config.timeout_for(call.server)

    async def _close_session(self, session_id: str) -> None:
        """Everything opened for an agent session closes with it."""
        await self.upstreams.close_session(session_id)
        if self.shell is not None:
            await self.shell.close_session(session_id)
        if self.browser is not None:
            await self.browser.close_session(session_id)

    def _sim_deadline_for(self, call: Call) -> float:
        return self.config.sim_timeout_for(call.server)

    async def start(self) -> Runtime:
        self.store.open()
        self.sessions.start()
        if self.shell is not None:
            await self.shell.start()
        if self.config.may_simulate():
            self._in_background(self._preload_world_model(), "simroute-world-model-load")
        if self.config.shadow.drain_on_start and self.store.pending():
            self._in_background(self._drain(), "simroute-shadow-drain")
        return self

    def _in_background(self, work, name: str) -> None:
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _preload_world_model(self) -> None:
        try:
            await self.world_model.start()
        except Exception as exc:  # reported again, per call, as a sim error observation
            log.error("world model not loaded: %s", exc)

    async def _drain(self) -> None:
        completed = await self.shadow.drain()
        log.info("completed %d shadow records left pending by an earlier stop", completed)

    async def aclose(self) -> None:
        log.info("stopping")
        # Shadow work gets a short grace; what does not finish stays pending in the store.
        await self.shadow.aclose(grace_s=1.0)
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.sessions.aclose()
        await self.upstreams.aclose()
        if self.shell is not None:
            await self.shell.aclose()
        if self.browser is not None:
            await self.browser.aclose()
        await self.world_model.aclose()
        await self.store.aclose()
        log.info("stopped")

    async def __aenter__(self) -> Runtime:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
