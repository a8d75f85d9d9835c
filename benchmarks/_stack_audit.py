"""The records audit of benchmarks/stack_load.py: after a run, the store must hold
exactly one complete record per answered call, named by the step's `info.record_id`,
and no other call record of the run's episodes. Records are written off the answer's
path, so the audit reads again (up to `settle_s`) until nothing is missing or pending."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

# Records simroute writes about an episode rather than for a call (its reset).
NOT_CALLS = {"episode"}
EPISODE_SESSION = "episode-"  # an episode's agent session: `[token/]episode-<id>` (router/episodes/host.py)


class Records(Protocol):
    def records(self, since: float) -> list[dict[str, Any]]: ...


@dataclass
class Audit:
    answered: int  # calls answered with a record id
    found: int  # their records in the store
    lost: int  # answered, no record
    duplicated: int  # a record id given to two answers, stored twice, or a record of the run's episodes no answer named
    incomplete: int  # found, but not `complete`
    lost_ids: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return (
            f"{self.found}/{self.answered} found, lost {self.lost}, "
            f"duplicated {self.duplicated}, incomplete {self.incomplete}"
        )


def check(rows: list[dict[str, Any]], episodes: list[str], answered: list[str]) -> Audit:
    ours = set(episodes)
    wanted = set(answered)
    stored = Counter(r["id"] for r in rows)
    by_id = {r["id"]: r for r in rows}
    extra = [
        r
        for r in rows
        if r["id"] not in wanted
        and r.get("channel") not in NOT_CALLS
        and r["session"].rsplit(EPISODE_SESSION, 1)[-1] in ours
    ]
    duplicated = (
        sum(n - 1 for n in Counter(answered).values())
        + sum(n - 1 for i, n in stored.items() if i in wanted)
        + len(extra)
    )
    found = [by_id[i] for i in wanted if i in by_id]
    incomplete = sum(1 for r in found if r.get("status", "complete") != "complete")
    lost = sorted(wanted - set(by_id))
    return Audit(len(answered), len(found), len(lost), duplicated, incomplete, lost)


def audit(target: Records, since: float, episodes: list[str], answered: list[str], settle_s: float = 30.0) -> Audit:
    deadline = time.monotonic() + settle_s
    while True:
        result = check(target.records(since), episodes, answered)
        if (result.lost == 0 and result.incomplete == 0) or time.monotonic() > deadline:
            return result
        time.sleep(1.0)
