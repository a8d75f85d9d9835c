"""The learned router's model in Redis, shared by the replicas: one replica
publishes a trained model, every replica is told (pub/sub) and loads it."""

from __future__ import annotations

import base64

from records.store.redis.base import RedisBase


class LearnedModels(RedisBase):
    async def publish_model(self, data: bytes, digest: str) -> None:
        """Store a learned model and announce it: replicas see the new version and load it."""
        payload = base64.b64encode(data).decode("ascii")

        async def work(r):
            await r.set(self._key("learned", "model"), payload)
            await r.set(self._key("learned", "version"), digest)
            await r.publish(self._key("learned", "reload"), digest)

        await self._run("publishing a learned model", work)

    async def subscribe_models(self):
        """A pub/sub subscription (its own connection) to the announcements
        `publish_model` makes: a replica wakes as soon as a model is published.
        Read it with `next_announcement`; close it with its `aclose()`."""

        async def work(r):
            pubsub = r.pubsub(ignore_subscribe_messages=True)
            await pubsub.subscribe(self._key("learned", "reload"))
            return pubsub

        return await self._run("subscribing to learned model announcements", work)

    async def next_announcement(self, pubsub, *, timeout_s: float) -> str | None:
        """The digest of the next model announced within `timeout_s`, else None."""

        async def work(_r):
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=timeout_s)
            return message["data"] if message and message.get("type") == "message" else None

        return await self._run("waiting for learned model announcements", work)

    async def model_version(self) -> str | None:
        return await self._run("reading the learned model's version", lambda r: r.get(self._key("learned", "version")))

    async def published_model(self) -> bytes | None:
        payload = await self._run("reading the learned model", lambda r: r.get(self._key("learned", "model")))
        return base64.b64decode(payload) if payload else None
