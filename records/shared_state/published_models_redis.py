"""The learned router's model in Redis, shared by the replicas: `simroute reload`
stores a trained model (`<prefix>:learned:model`, its version in
`<prefix>:learned:version`) and announces it on `<prefix>:learned:reload`; every
replica is told at once and loads it. The version key is also read every few
seconds, so a replica that was not subscribed when a model was published (starting,
or Redis briefly away) still loads it."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from records.store.protocol import StoreError
from records.store.redis.base import REDIS_ERRORS, RedisBase

log = logging.getLogger("simroute.learned")


class RedisPublishedModels:
    name = "redis"

    def __init__(self, store: RedisBase) -> None:
        self.store = store

    async def publish(self, path: Path, data: bytes, digest: str) -> bool:
        """Store a model and announce it: replicas see the new version and load it. A
        command publishing from outside a router opens the store here."""
        payload = base64.b64encode(data).decode("ascii")
        model, version, channel = self._key("model"), self._key("version"), self._key("reload")

        async def work(r):
            await r.set(model, payload)
            await r.set(version, digest)
            await r.publish(channel, digest)

        await self.store.open()
        await self.store.run("publishing a learned model", work)
        return True

    async def version(self) -> str | None:
        key = self._key("version")
        return await self.store.run("reading the learned model's version", lambda r: r.get(key))

    async def model(self) -> bytes | None:
        key = self._key("model")
        payload = await self.store.run("reading the learned model", lambda r: r.get(key))
        return base64.b64decode(payload) if payload else None

    async def follow(self, check: Callable[[], Awaitable[object]], *, poll_s: float) -> None:
        await follow_channel(self.store, self._key("reload"), check, poll_s=poll_s, what="learned model")

    def _key(self, part: str) -> str:
        """`model`, its `version`, or the announcements' channel (`reload`)."""
        return self.store.key("learned", part)


async def follow_channel(
    store: RedisBase, channel: str, check: Callable[[], Awaitable[object]], *, poll_s: float, what: str
) -> None:
    """Call `check` once subscribed to `channel` (anything published before), after each
    announcement on it and every `poll_s`, until cancelled; while Redis is away, every
    `poll_s` (a replica not subscribed when something was published still sees it)."""
    subscription = None
    try:
        while True:
            try:
                if subscription is None:
                    subscription = await _subscribe(store, channel, what)
                    await check()
                await _next_announcement(store, subscription, timeout_s=poll_s, what=what)
            except StoreError as exc:
                log.warning("%s announcements not received (%s); polling every %gs", what, exc, poll_s)
                await _closed(subscription)
                subscription = None
                await asyncio.sleep(poll_s)
            await check()
    finally:
        await _closed(subscription)


async def _subscribe(store: RedisBase, channel: str, what: str) -> Any:
    """A pub/sub subscription (its own connection) to `channel`; closed with `_closed`."""

    async def work(r):
        pubsub = r.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe(channel)
        return pubsub

    return await store.run(f"subscribing to {what} announcements", work)


async def _next_announcement(store: RedisBase, pubsub: Any, *, timeout_s: float, what: str) -> str | None:
    """The next message announced within `timeout_s`, else None."""

    async def work(_r):
        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=timeout_s)
        return message["data"] if message and message.get("type") == "message" else None

    return await store.run(f"waiting for {what} announcements", work)


async def _closed(subscription: Any) -> None:
    """Close a pub/sub subscription, whatever state its connection is in."""
    if subscription is not None:
        try:
            await subscription.aclose()
        except REDIS_ERRORS as exc:  # a dead connection may fail to close: nothing left to release
            log.debug("closing the model subscription: %s", exc)
