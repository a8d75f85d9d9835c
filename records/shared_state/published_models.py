"""The learned router's model as `simroute reload` publishes it to running routers.

`PublishedModels` is the protocol. One router (the embedded store) watches its model
file: `LocalPublishedModels` publishes by marking the file changed, and nothing is
ever announced to follow. With a Redis store (published_models_redis.py) the model
is stored in Redis and announced on a channel: every replica loads it. Which one a
router has is decided where the store is opened (`SharedState.published_models`,
deployment.py); the loading is router/runtime/learned_service.py's.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol


class PublishedModels(Protocol):
    # Where a published model comes from, as a loaded model's source names it.
    name: str

    async def publish(self, path: Path, data: bytes, digest: str) -> bool:
        """Make running routers load the model `data` (the file at `path`, `digest`):
        True: published to every replica; False: the file marked changed (one router
        watches it)."""

    async def version(self) -> str | None:
        """The published model's version (None: none published)."""

    async def model(self) -> bytes | None: ...

    async def follow(self, check: Callable[[], Awaitable[object]], *, poll_s: float) -> None:
        """Call `check` whenever a model may have been published (each announcement, and
        every `poll_s`), until cancelled; returns at once when nothing is ever published."""


class LocalPublishedModels:
    """One router: the model file is what it loads (router/runtime/learned_service.py
    watches it); nothing is published beside it."""

    name = "file"

    async def publish(self, path: Path, data: bytes, digest: str) -> bool:
        os.utime(path)  # the router watching the file loads it anew
        return False

    async def version(self) -> str | None:
        return None

    async def model(self) -> bytes | None:
        return None

    async def follow(self, check: Callable[[], Awaitable[object]], *, poll_s: float) -> None:
        return None
