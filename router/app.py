"""The assembled runtime: config in, engine, sessions, records and upstreams out.

Front doors hold one `Runtime`; it opens its parts in `start()` and closes
them in `aclose()`.
"""

from __future__ import annotations

from backends.mcp_upstream import UpstreamPool
from backends.replay import ReplayBackend
from policies import default_policies
from router.config import Config
from router.engine import Engine
from router.sessions import SessionRegistry
from router.types import Call
from shadow.spool import SpoolingWriter
from shadow.sqlite_store import SQLiteStore, StoreError


class Runtime:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.store = SQLiteStore(config.store_path, synchronous=config.store.synchronous)
        self.upstreams = UpstreamPool(config.upstreams, connect_timeout_s=config.startup_timeout_s)
        self.sessions = SessionRegistry(
            idle_ttl_s=config.sessions.idle_ttl_s,
            max_open=config.sessions.max_open,
            on_close=self.upstreams.close_session,
        )
        self.engine = Engine(
            policies=default_policies(rules=config.parsed_rules(), mode=config.mode),
            records=SpoolingWriter(self.store, config.store_path.with_suffix(".spool.jsonl"), errors=(StoreError,)),
            replay=ReplayBackend(self.store, ignore_arguments=config.replay.ignore_arguments),
            replay_on_miss=config.replay.on_miss,
            deadline_for=self._deadline_for,
        )

    def _deadline_for(self, call: Call) -> float:
        return self.config.timeout_for(call.server)

    async def start(self) -> Runtime:
        self.store.open()
        self.sessions.start()
        return self

    async def aclose(self) -> None:
        await self.sessions.aclose()
        await self.upstreams.aclose()
        await self.store.aclose()

    async def __aenter__(self) -> Runtime:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
