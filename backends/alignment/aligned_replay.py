"""Sequence-aligned replay: a simulated call answered from a recorded real session
that made the same calls, before any world model is asked.

1. Aligned: this session's calls to the call's environment so far, then the call,
   are a recorded session's calls under a consistent renaming of their values
   (sequence.py, renaming.py): the recorded answer at the call's position is served
   with this session's values written in. The recorded sessions tried are the
   newest that made a real call of the tool (`RecordStore.tool_sessions`, at most
   `candidates`), each read up to a little past this session's step. Once aligned,
   the session keeps a trail (`AlignmentTrails`, in the process): its next call reads
   only the recording's calls since the last aligned one, so a call costs the same at
   step 200 as at step 2; a session that leaves the recording's path is searched for
   again.
2. Identical: the call's own replay key has recorded real answers from other
   sessions, and they are all the same: that answer is served.

Only answers the real side gave (or replays of them) are ever served: never a
simulated one, simroute's own (a denial, a deadline), a perturbed one, one recorded
truncated, or one whose call had not finished. Recordings of another token are never
read (`ReplayBackend.visible`, as replay and the world model's examples).

The answer is the recorded observation as `Provenance.SIM` (the sim route's answer;
its sub-provenance is `replay-aligned`), with the record it came from and the
renaming used. Nothing here raises for a miss, nor when the store cannot be read
(logged): `answer` returns None and the sim route asks the world model.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from backends.alignment.renaming import Renaming
from backends.alignment.sequence import align, same_environment
from backends.replay import ReplayBackend, servable_record
from calls import HISTORY_IN_MEMORY, Call, Observation, Provenance, Session, SessionSlice, Turn
from records.record import Record
from records.store.protocol import RecordStore, StoreError

log = logging.getLogger("simroute.alignment")

# Records of a candidate session read at most (its calls near this session's position).
MAX_READ = 2 * HISTORY_IN_MEMORY
# Records read past a trail's next calls at first (other environments' calls between).
_FOLLOW_SLACK = 2

Basis = Literal["sequence", "identical"]


@dataclass(frozen=True, slots=True)
class AlignedAnswer:
    """What the sim route serves instead of asking the model."""

    observation: Observation  # provenance SIM; this session's values written in
    record_id: str  # the recorded real answer it came from
    source_session: str
    basis: Basis  # "sequence": the aligned position of a recorded session; "identical": the key's only answer
    # sequence: the call's index among the source's calls to its environment (counted from the
    # first one read: a long recording aligned as a window is read from near the call's step)
    position: int | None = None
    renaming: dict[str, str] = field(default_factory=dict)  # recorded value -> this session's (only those that differ)


@dataclass(slots=True)
class Trail:
    """Where this session's calls to one environment stand in a recording they align with."""

    source: str  # the recorded session
    renaming: Renaming
    call: Call  # this session's last aligned call (the object its turn holds)
    position: int  # its index among the recording's calls to the environment
    step: int = -1  # the recording's step at that index


@dataclass(slots=True)
class AlignmentTrails(SessionSlice):
    """Per environment (channel, server), the recording the session's calls last aligned
    with, kept in the process: the next call reads only the recording's calls since,
    instead of the whole recording again (a lost trail is found again by the search)."""

    trails: dict[tuple[str, str], Trail] = field(default_factory=dict)


class AlignedReplay:
    """Answers a call from recorded real sessions (module doc). `replay` gives the
    call's replay key and the token namespaces a session may read."""

    def __init__(
        self,
        store: RecordStore,
        replay: ReplayBackend,
        *,
        channels: Sequence[str] = ("mcp",),
        candidates: int = 8,
        read_ahead: int = 32,
        identical_examples: int = 16,
        min_identical: int = 1,
    ) -> None:
        if candidates < 1 or read_ahead < 1 or identical_examples < 1 or min_identical < 1:
            raise ValueError("candidates, read_ahead, identical_examples and min_identical must be at least 1")
        self.store = store
        self.replay = replay
        self.channels = frozenset(channels)
        self.candidates = candidates
        # Records read past this session's step: the recording's calls to other environments between.
        self.read_ahead = read_ahead
        self.identical_examples = identical_examples
        self.min_identical = min_identical

    async def answer(self, call: Call, session: Session) -> AlignedAnswer | None:
        """The recorded answer `call` gets in `session` (the call's turn not yet in
        its history), or None: ask the model."""
        if call.channel not in self.channels:
            return None
        started = time.perf_counter()
        try:
            found = await self.aligned(call, session) or await self.identical(call, session)
        except StoreError as exc:  # the store is down: the model answers, as it would without a recording
            log.warning("aligned replay of %s.%s skipped: %s", call.server, call.tool, exc)
            return None
        if found is None:
            return None
        found.observation.latency_s = time.perf_counter() - started
        return found

    async def aligned(self, call: Call, session: Session) -> AlignedAnswer | None:
        """The answer at the call's position in the recorded session this one follows
        (its trail), else in the newest recorded session it aligns with."""
        trails = session.find(AlignmentTrails)
        trail = trails.trails.get((call.channel, call.server)) if trails is not None else None
        if trail is not None:
            followed = await self._follow(trail, call, session)
            if followed is not None:
                return followed
        return await self._search(call, session)

    async def _search(self, call: Call, session: Session) -> AlignedAnswer | None:
        known = [turn.call for turn in session.history if same_environment(turn.call, call)]
        sessions = await self.store.tool_sessions(
            call.channel,
            call.server,
            call.tool,
            exclude_session=session.id,
            limit=self.candidates,
            namespaces=self.replay.visible_namespaces(session.id),
        )
        before = session.steps + self.read_ahead
        limit = min(before, MAX_READ)
        for source in sessions:
            if not self.replay.visible(session.id, source):
                continue
            records = await self.store.session_records(source, before_step=before, limit=limit)
            recorded = [record for record in records if same_environment(record.call, call)]
            complete = len(records) < limit or (bool(records) and records[0].step == 0)
            found = align(
                [record.call for record in recorded], known, call, anchored=complete and session.forgotten == 0
            )
            if found is not None:
                served = self._served(
                    recorded[found.position], Trail(source, found.renaming, call, found.position), session
                )
                if served is not None:
                    return served
        return None

    async def _follow(self, trail: Trail, call: Call, session: Session) -> AlignedAnswer | None:
        """The next answer of the trail's recording: only its calls since the trail's
        last are read and aligned with this session's calls since."""
        since = _turns_after(session.history, trail.call)
        if since is None:  # its last call is no longer in memory (or this is a copy of the session)
            return None
        new = [*(turn.call for turn in since if same_environment(turn.call, call)), call]
        recorded: list[Record] = []
        # Most often the recording's next records are the ones wanted: read just past them
        # first, and as far as `read_ahead` only when other environments' calls came between.
        for ahead in (len(new) + _FOLLOW_SLACK, len(new) + self.read_ahead):
            records = await self.store.session_records(trail.source, before_step=trail.step + 1 + ahead, limit=ahead)
            recorded = [
                record for record in records if record.step > trail.step and same_environment(record.call, call)
            ][: len(new)]
            if len(recorded) == len(new) or len(records) < ahead:
                break
        renaming = trail.renaming.copy()
        if len(recorded) < len(new) or any(
            theirs.call.tool != ours.tool or not renaming.pair(theirs.call.arguments, ours.arguments)
            for theirs, ours in zip(recorded, new, strict=False)
        ):
            return None
        return self._served(recorded[-1], Trail(trail.source, renaming, call, trail.position + len(new)), session)

    def _served(self, record: Record, trail: Trail, session: Session) -> AlignedAnswer | None:
        """`record`'s answer with this session's values, when it may be served; the
        session's trail then ends at it."""
        if not servable_record(record):
            return None
        trail.step = record.step
        session.slice(AlignmentTrails).trails[(trail.call.channel, trail.call.server)] = trail
        renamed = trail.renaming.apply(_simulated(record.served))
        return AlignedAnswer(renamed, record.id, trail.source, "sequence", trail.position, trail.renaming.changed)

    async def identical(self, call: Call, session: Session) -> AlignedAnswer | None:
        """The one answer other sessions' real calls with this call's replay key got."""
        key = self.replay.keys(call).replay
        rows: list[dict[str, Any]] = []
        for visible_key in self.replay.visible_keys(key, session.id):
            found = await self.store.examples(
                call.channel,
                call.server,
                call.tool,
                exclude_session=session.id,
                call_key=visible_key,
                limit=self.identical_examples,
                namespaces=self.replay.visible_namespaces(session.id),
            )
            rows += [
                row
                for row in found
                if row.get("replay_key") == visible_key and self.replay.visible(session.id, str(row["session"]))
            ]
        sources = [record for record in map(Record.from_json, rows) if servable_record(record)]
        if len(sources) < self.min_identical:
            return None
        first = sources[0].served
        if any(not _same_answer(first, other.served) for other in sources[1:]):
            return None
        newest = max(sources, key=lambda record: record.ts)
        return AlignedAnswer(_simulated(newest.served), newest.id, newest.call.session_id, "identical")


def _turns_after(history: Sequence[Turn], call: Call) -> Sequence[Turn] | None:
    """The turns after the one of `call` (that very object), or None when none holds it."""
    for index in range(len(history) - 1, -1, -1):
        if history[index].call is call:
            return history[index + 1 :]
    return None


def _same_answer(a: Observation, b: Observation) -> bool:
    return a.content == b.content and a.structured == b.structured and a.is_error == b.is_error


def _simulated(recorded: Observation) -> Observation:
    return Observation(recorded.content, Provenance.SIM, recorded.is_error, recorded.structured)
