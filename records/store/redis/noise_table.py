"""The noise table in Redis, shared by the replicas: per tool, how many real-vs-real
pairs were compared and how often each path disagreed."""

from __future__ import annotations

from collections.abc import Iterable

from records.store.noise_counts import NoiseStats
from records.store.redis.base import RedisBase


class NoiseTable(RedisBase):
    async def add_noise_observation(self, tool_key: str, disagreeing: Iterable[str], *, name: str = "") -> None:
        async def work(r):
            pipe = r.pipeline(transaction=True)
            pipe.hincrby(self._key("noise", tool_key), "\x00pairs", 1)
            for path in set(disagreeing):
                pipe.hincrby(self._key("noise", tool_key), path, 1)
            pipe.hset(self._key("noise-tools"), tool_key, name or tool_key)
            await pipe.execute()

        await self._run("counting noise", work)

    async def noise_stats(self, tool_key: str) -> NoiseStats:
        counts = await self._run("reading noise", lambda r: r.hgetall(self._key("noise", tool_key)))
        pairs = int(counts.pop("\x00pairs", 0))
        return NoiseStats(pairs=pairs, disagreements={path: int(n) for path, n in counts.items()})

    async def noise_table(self) -> list[tuple[str, str, NoiseStats]]:
        tools = await self._run("listing noise", lambda r: r.hgetall(self._key("noise-tools")))
        return [
            (key, name, await self.noise_stats(key)) for key, name in sorted(tools.items(), key=lambda item: item[1])
        ]
