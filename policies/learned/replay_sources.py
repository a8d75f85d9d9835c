"""What replay would serve, worked out from records in time order.

The same rule as live replay (backends/replay.py): a session's n-th call of a
replay key is answered with the n-th occurrence of that key in its source, the
other session whose latest call of the key is the most recent when this session
first makes the call; the source is kept for the session. An occurrence the
source got from the world model or from simroute itself (or recorded truncated)
counts in the numbering but is a miss.

Replay labels (labels.py) and the workload replay behind `simroute train` and
`simroute eval` (router/reports/workload.py) both read this, so a label scores
the answer replay would really have served, and a report's replays are the ones
the router would really make. Memory is bounded: the newest `SESSIONS_PER_KEY`
sessions of each of the newest `MAX_KEYS` keys, `MAX_OCCURRENCES` answers each.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from calls import Observation

SESSIONS_PER_KEY = 4
MAX_KEYS = 100_000
MAX_OCCURRENCES = 64
_REPLAYABLE = frozenset({"real", "replay"})
_SERVED = frozenset({"complete", "pending"})  # the answer was served (not a write-ahead or an interrupted call)


@dataclass(frozen=True, slots=True)
class Served:
    """A hit: the recorded answer and where it came from."""

    observation: Observation
    session: str
    record_id: str


@dataclass(frozen=True, slots=True)
class Missed:
    reason: str
    has_source: bool = True  # an earlier session made the call (replay modes treat the two apart)


@dataclass(slots=True)
class _SessionAnswers:
    source: str | None  # the session this one replays the key from (chosen at its first call)
    last_ts: float = 0.0
    # occurrence -> (record id, replayable answer or None for a miss)
    answers: dict[int, tuple[str, Observation | None]] = field(default_factory=dict)


class ReplaySources:
    def __init__(self) -> None:
        self._keys: OrderedDict[str, OrderedDict[str, _SessionAnswers]] = OrderedDict()

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def serve(self, key: str, session: str, occurrence: int) -> Served | Missed:
        """What replay would answer `session`'s `occurrence`-th call of `key` now."""
        sessions = self._keys.get(key)
        entry = sessions.get(session) if sessions is not None else None
        source = entry.source if entry is not None else self._newest_other(sessions, session)
        if source is None or sessions is None:
            return Missed("no call like this in any earlier session", has_source=False)
        answers = sessions.get(source)
        found = answers.answers.get(occurrence) if answers is not None else None
        if found is None:
            return Missed(f"the source session made this call fewer than {occurrence} times")
        record_id, observation = found
        if observation is None:
            return Missed(f"occurrence {occurrence} in the source was not answered by the real side")
        return Served(observation, source, record_id)

    def note(self, row: dict[str, Any], key: str, answer: Observation | None) -> None:
        """Add a record (in time order) with the answer replay may serve from it
        (`replayable(row)`, or None for a miss)."""
        session, ts = row["session"], float(row["ts"])
        sessions = self._keys.get(key)
        if sessions is None:
            sessions = self._keys[key] = OrderedDict()
            while len(self._keys) > MAX_KEYS:
                self._keys.popitem(last=False)
        else:
            self._keys.move_to_end(key)
        entry = sessions.get(session)
        if entry is None:
            entry = sessions[session] = _SessionAnswers(self._newest_other(sessions, session))
        entry.last_ts = ts
        sessions.move_to_end(session)
        while len(sessions) > SESSIONS_PER_KEY:
            sessions.popitem(last=False)
        occurrence = int(row.get("occurrence") or len(entry.answers) + 1)
        if occurrence in entry.answers or len(entry.answers) >= MAX_OCCURRENCES:
            return
        entry.answers[occurrence] = (row["id"], answer)

    @staticmethod
    def _newest_other(sessions: OrderedDict[str, _SessionAnswers] | None, session: str) -> str | None:
        if not sessions:
            return None
        for other in reversed(sessions):
            if other != session:
                return other
        return None


def replayable(row: dict[str, Any]) -> Observation | None:
    """The answer a record holds that replay may serve (a real or replayed answer, not
    truncated; live replay also serves one whose shadow work is still pending), or None."""
    if (
        row.get("provenance") not in _REPLAYABLE
        or row.get("status", "complete") not in _SERVED
        or not row.get("observation")
    ):
        return None
    if row.get("perturbation"):  # what a perturbation made or changed is never served again
        return None
    observation = Observation.from_json(row["observation"])
    return None if observation.truncated else observation
