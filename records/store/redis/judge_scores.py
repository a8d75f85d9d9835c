"""Judge scores in Redis (`simroute judge`, records/judge/): one hash per judge model
(`<prefix>:judge:<model>`), a field per pair (`<kind>:<record id>`) holding the score
as JSON, and the set of judge models (`<prefix>:judges`). Scores are few (a judge
run scores hundreds of pairs, not the store): the dashboard's summary reads them all,
a hash at a time with HSCAN."""

from __future__ import annotations

import json
from typing import Any

from records.store.judge_summary import selected, summarise
from records.store.protocol import RecordFilter
from records.store.redis.base import RedisBase


class JudgeScores(RedisBase):
    async def save_judge_scores(self, rows: list[dict[str, Any]]) -> None:
        async def work(r):
            pipe = r.pipeline(transaction=True)
            for row in rows:
                pipe.sadd(self._key("judges"), row["judge"])
                pipe.hset(
                    self._key("judge", row["judge"]),
                    f"{row['kind']}:{row['record_id']}",
                    json.dumps(row, ensure_ascii=False),
                )
            await pipe.execute()

        await self._run("storing judge scores", work)

    async def judge_scores(self, record_id: str) -> list[dict[str, Any]]:
        async def work(r):
            out = []
            for judge in sorted(await r.smembers(self._key("judges"))):
                for body in await r.hmget(
                    self._key("judge", judge), [f"simulated:{record_id}", f"control:{record_id}"]
                ):
                    if body:
                        out.append(json.loads(body))
            return out

        return await self._run("reading judge scores", work)

    async def judge_summary(self, where: RecordFilter) -> list[dict[str, Any]]:
        async def work(r):
            rows = []
            for judge in sorted(await r.smembers(self._key("judges"))):
                async for _field, body in r.hscan_iter(self._key("judge", judge), count=500):
                    row = json.loads(body)
                    if selected(row, where):
                        rows.append(row)
            return rows

        return summarise(await self._run("reading judge scores", work))
