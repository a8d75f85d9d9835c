"""The adopted world model followed by a running router: when `simroute tune --adopt`
(or `--revert`) changes the adoption (records/shared_state/adopted_world_model.py),
a new model runner is built with the adopted file (an adapter over the configured
model, or a merged model in its place; after a revert to nothing, the config's own),
loaded off the call path and swapped in between calls (backends/world_model/
swappable_runner.py). `world_model.lora_path` is where a router starts; an adoption
overrides it. A served model (`engine: openai`) has nothing to swap: not followed.
A runner that fails to load leaves the current one in place, and the log says why."""

from __future__ import annotations

import logging
from pathlib import Path

from backends.world_model.swappable_runner import SwappableRunner
from records.shared_state.adopted_world_model import AdoptedWorldModel, Adoption
from records.store.protocol import StoreError
from router.config import Config
from router.runtime.simulated_side import build_model_runner

log = logging.getLogger("simroute.world_model")

# One router polls the adoption's file; replicas are told at once, this is their fallback.
LOCAL_POLL_S, ANNOUNCED_POLL_S = 1.0, 10.0


class AdoptionFollower:
    def __init__(self, config: Config, runner: SwappableRunner, adopted: AdoptedWorldModel) -> None:
        self.config = config
        self.runner = runner
        self.adopted = adopted
        self.poll_s = ANNOUNCED_POLL_S if adopted.name == "redis" else LOCAL_POLL_S
        self._version: str | None = None  # the adoption in place (None: the config's model)
        self.swaps = 0

    @property
    def applies(self) -> bool:
        return self.config.world_model.engine == "llama"

    async def start(self) -> None:
        """At the router's start, before the model loads: the adoption in place, if any,
        replaces the configured runner (so the config's model is not loaded first)."""
        if not self.applies:
            return
        try:
            version, adoption = await self.adopted.version(), await self.adopted.current()
            if adoption is not None:
                self.runner.replace(build_model_runner(self.config, adopted=await self._files(adoption)))
                log.info("world model: %s", _named(adoption))
        except (StoreError, OSError) as exc:
            log.error("world model: the adopted model could not be read (%s); starting with the config's", exc)
            return
        self._version = version

    async def follow(self) -> None:
        if self.applies:
            await self.adopted.follow(self.check, poll_s=self.poll_s)

    async def check(self) -> bool:
        """Swap in the adopted model if the adoption changed; True if swapped."""
        try:
            version = await self.adopted.version()
            if version == self._version:
                return False
            adoption = await self.adopted.current()
            files = await self._files(adoption) if adoption is not None else None
        except (StoreError, OSError) as exc:
            log.warning("world model: cannot read the adopted model: %s", exc)
            return False
        self._version = version  # tried once: a model that does not load is not retried every poll
        try:
            await self.runner.swap(build_model_runner(self.config, adopted=files))
        except Exception as exc:  # noqa: BLE001 -- a background task's boundary: the current model keeps answering
            log.error("world model: the adopted model did not load (%s); keeping %s", exc, self.runner.model_name)
            return False
        self.swaps += 1
        log.info("world model: swapped to %s", _named(adoption) if adoption else "the config's own model (reverted)")
        return True

    async def _files(self, adoption: Adoption) -> tuple[Path, Path | None]:
        """The model file and adapter the adoption puts in place."""
        file = await self.adopted.file(adoption)
        return (self.config.model_path, file) if adoption.kind == "adapter" else (file, None)


def _named(adoption: Adoption) -> str:
    return f"adopted {adoption.kind} {adoption.digest[:12]} from {adoption.run} ({adoption.adopted_at})"
