"""The learned router's upkeep, off the decision path: the model file watched and
reloaded, per-tool statistics and recorded replay keys refreshed from the store,
and models published by `simroute reload` loaded by every replica (with a Redis
store: records/shared_state/published_models.py).

The policy holds a model and a state object; this service builds new ones in a
worker thread and swaps the references, so a decision never waits for it. A
model that fails to load leaves the previous one in place, and the log (and
`last_error`) says why.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from policies.errors import ModelLoadError
from policies.learned import LearnedPolicy, StateBuilder
from policies.learned.persistence import load_model, load_model_bytes
from policies.learned.tenancy import NO_TOKENS, Tenancy
from records.shared_state.published_models import LocalPublishedModels, PublishedModels
from records.store.protocol import StoreError

log = logging.getLogger("simroute.learned")


class LearnedService:
    def __init__(
        self,
        policy: LearnedPolicy,
        store: Any,
        *,
        model_path: Path,
        max_divergence: float,
        prior_strength: float,
        refresh_s: float = 30.0,
        watch_s: float = 1.0,
        max_records: int = 50_000,
        publish_poll_s: float = 10.0,
        tenancy: Tenancy = NO_TOKENS,
        published: PublishedModels | None = None,
    ) -> None:
        self.policy = policy
        self.store = store
        # Where `simroute reload` publishes models (one router: nowhere, it watches the file).
        self.published: PublishedModels = published or LocalPublishedModels()
        self.model_path = model_path
        self.refresh_s = refresh_s
        self.watch_s = watch_s
        self.publish_poll_s = publish_poll_s  # the fallback behind the reload channel's announcements
        self.max_records = max_records
        # Statistics per token namespace, the shared namespaces counted for every token.
        self.builder = StateBuilder(max_divergence=max_divergence, prior_strength=prior_strength, tenancy=tenancy)
        self.last_error: str | None = None
        self.loads = 0  # models loaded (tests, logs)
        self._file_seen: tuple[int, int, int] | None = None
        self._watermark: float = 0.0
        self._seen: dict[str, float] = {}  # record ids at or after the watermark already read
        self._published: str | None = None

    # --- the model -------------------------------------------------------------------------------

    def _file_signature(self) -> tuple[int, int, int] | None:
        try:
            stat = self.model_path.stat()
        except FileNotFoundError:
            return None
        return stat.st_mtime_ns, stat.st_size, stat.st_ino

    async def load_file(self) -> bool:
        """Load the model file (in a thread); on failure keep the current model."""
        self._file_seen = await asyncio.to_thread(self._file_signature)
        if self._file_seen is None:
            return False
        try:
            model = await asyncio.to_thread(load_model, self.model_path)
        except ModelLoadError as exc:
            return self._failed(exc)
        return self._swap(model)

    async def load_bytes(self, data: bytes, source: str) -> bool:
        try:
            model = await asyncio.to_thread(load_model_bytes, data, source=source)
        except ModelLoadError as exc:
            return self._failed(exc)
        return self._swap(model)

    def _failed(self, exc: ModelLoadError) -> bool:
        kept = f"model {self.policy.model.digest}" if self.policy.model is not None else "no model (per-tool estimates)"
        self.last_error = f"{exc}; keeping {kept}"
        log.error("learned router: %s", self.last_error)
        return False

    def _swap(self, model) -> bool:
        self.policy.model = model
        self.last_error = None
        self.loads += 1
        routes = (
            ", ".join(f"{route} threshold {m.threshold:.3f}" for route, m in sorted(model.routes.items()))
            or "no trained route"
        )
        log.info("learned router: loaded model %s from %s (%s)", model.digest, model.source, routes)
        return True

    async def watch(self) -> None:
        """Reload when the model file changes (written anew, or touched by `simroute reload`)."""
        while True:
            await asyncio.sleep(self.watch_s)
            signature = await asyncio.to_thread(self._file_signature)
            if signature is not None and signature != self._file_seen:
                await self.load_file()
            else:
                self._file_seen = signature

    async def follow_published(self) -> None:
        """Load the models `simroute reload` publishes (records/shared_state/published_models.py:
        with a Redis store, announced on a channel and polled every `publish_poll_s`; one
        router has none to follow)."""
        await self.published.follow(self.check_published, poll_s=self.publish_poll_s)

    async def check_published(self) -> bool:
        """Load the published model if its version is new; True if one was loaded."""
        try:
            version = await self.published.version()
            if not version or version == self._published:
                return False
            data = await self.published.model()
        except StoreError as exc:
            log.warning("learned router: cannot read the published model: %s", exc)
            return False
        self._published = version
        if not data:
            return False
        return await self.load_bytes(data, f"{self.published.name} (version {version[:12]})")

    # --- statistics ------------------------------------------------------------------------------

    async def start(self) -> None:
        """The model file if there is one, and statistics from the newest `max_records` records."""
        await self.load_file()
        rows = await self.store.recent(limit=self.max_records)
        await self._take(rows)

    async def refresh(self) -> int:
        """Read records since the last refresh and swap in new statistics; returns how
        many new records were read. Records not finished yet (shadow work pending) hold
        the watermark back, so their labels are read once they complete."""
        rows = await self.store.learning_rows(since=self._watermark, limit=self.max_records)
        return await self._take(rows)

    async def _take(self, rows: list[dict[str, Any]]) -> int:
        fresh = [row for row in rows if row.get("status") == "complete" and row["id"] not in self._seen]
        unfinished = [row["ts"] for row in rows if row.get("status") in ("pending", "started")]
        if fresh:
            await asyncio.to_thread(self.builder.add, fresh)
        for row in fresh:
            self._seen[row["id"]] = row["ts"]
        if rows:
            self._watermark = min(unfinished) if unfinished else rows[-1]["ts"]
            self._seen = {i: ts for i, ts in self._seen.items() if ts >= self._watermark}
        if fresh or self.policy.state.labels == 0:
            self.policy.state = await asyncio.to_thread(self.builder.snapshot)
        return len(fresh)

    async def refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(self.refresh_s)
            try:
                await self.refresh()
            except StoreError as exc:
                log.warning("learned router: statistics not refreshed: %s", exc)


def build_learned_service(
    config: Any, store: Any, *, published: PublishedModels | None = None, replay_key_of: Any = None
) -> LearnedService:
    """The service of a learned policy configured by `config.learned`, on `store`;
    `published`: where `simroute reload` publishes models (None: followed nowhere)."""
    from router.runtime.expected_sub import expected_sub
    from router.runtime.policy_chain import learned_settings, learned_tenancy

    section = config.learned
    return LearnedService(
        LearnedPolicy(
            learned_settings(config), replay_key_of=replay_key_of, expected_sub=expected_sub(config.world_state.on_for)
        ),
        store,
        model_path=config.learned_model_path,
        max_divergence=section.max_divergence,
        prior_strength=section.prior_strength,
        refresh_s=section.refresh_s,
        watch_s=section.watch_s,
        max_records=section.max_records,
        tenancy=learned_tenancy(config),
        published=published,
    )
