"""Replay of recorded observations, VCR-style.

The n-th call of a key in a session replays what the source's n-th call of that
key observed, whichever route served it there: a real answer, or one replayed
from an earlier real answer. An occurrence the source got from the world model
or from simroute itself (a denial, a deadline) counts in the numbering but is a
miss; so is a body that was recorded truncated.

The source is the most recent earlier session whose answer to the call may stand
for the real side's (`records/servable.py`: real or replayed, unperturbed, whole,
finished), or, with `replay.from: NAME` (an episode's `recording`), the most
recent such session of that named recording: a session that only simulated,
perturbed or was refused the call is never a source. It is chosen at a session's
first call of a key and kept for the session. A call repeated more often than the
source made it misses (no cycling, no repeating the last answer): what happens then
is the miss policy's (router/engine/replay_modes.py).

The key is the call's server, tool and canonical arguments, minus the ignored
argument paths; with tokens on, it starts with the caller's token namespace
(`alice/…`), so a recording made under one token is never served to another,
except from the namespaces the config shares (`service.shared_namespaces`: e.g. a
CI token's golden recordings), tried after the caller's own. A channel may bring
its own canonical form of arguments (HTTP: normalised URL, JSON body, noisy query
parameters and body fields left out, a keyed digest of the credentials the request
carried).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from calls import Call, Observation, Provenance, ReplayAlias, Session, SessionSlice, call_key, canonical_json
from records.record import Record
from records.servable import REPLAYABLE, servable
from records.store.protocol import RecordStore, ReplayRow, ReplaySource
from shadow.compare.substitution import substituted


def servable_record(record: Record) -> bool:
    """Whether a record's answer may stand for the real side's elsewhere (replay sources,
    aligned replay, an API's resource state): records/servable.py's one rule."""
    return servable(
        str(record.served.provenance), record.status, record.perturbation is not None, record.served.truncated
    )


# Replay from the most recent earlier session that made the call (a frozen value: one is enough).
_LATEST = ReplaySource()


@dataclass(frozen=True, slots=True)
class CallKeys:
    replay: str  # what replay matches on: canonical arguments, ignored paths left out
    exact: str  # what the record stores: canonical arguments, nothing left out


@dataclass(frozen=True, slots=True)
class ReplayHit:
    observation: Observation
    record_id: str


@dataclass(frozen=True, slots=True)
class ReplayMiss:
    reason: str
    has_source: bool  # an earlier session made this call (it just has no usable answer for this occurrence)


@dataclass(slots=True)
class ReplaySources(SessionSlice):
    """The replay source session chosen for each replay key, kept for the session (in
    the process): a session's replays of a key come from one source, in its order."""

    sessions: dict[str, str] = field(default_factory=dict)


class ReplayBackend:
    def __init__(
        self,
        store: RecordStore,
        *,
        ignore_arguments: Sequence[str] = (),
        canonical: Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]] | None = None,
        source: ReplaySource = _LATEST,
        scheme_inputs: Any = None,
        namespaced: bool = False,
        shared_namespaces: Sequence[str] = (),
        withheld: Callable[[str], bool] | None = None,
    ) -> None:
        self.store = store
        # Sessions whose recordings are shown to no session (compare-models' held-out side,
        # an export's test side): what is measured, never a source of answers.
        self.withheld = withheld
        self.ignore_arguments = tuple(ignore_arguments)
        # Per channel: arguments -> their canonical form for keys.
        self.canonical = dict(canonical or {})
        self.source = source
        # With tokens on, session ids are `token/session` (router/auth.py): the token
        # part scopes replay keys.
        self.namespaced = namespaced
        # Token namespaces whose recordings every token may replay, as key prefixes.
        self.shared = tuple(f"{name}/" for name in shared_namespaces) if namespaced else ()
        # Identifies how replay keys are made: records made under another scheme are
        # re-keyed when the store opens (so ignored paths apply to old records too).
        inputs = [list(self.ignore_arguments), scheme_inputs, *(["namespaced"] if namespaced else [])]
        self.scheme = hashlib.sha256(canonical_json(inputs).encode()).hexdigest()[:16]

    def canonical_arguments(self, channel: str, arguments: dict[str, Any]) -> dict[str, Any]:
        form = self.canonical.get(channel)
        return form(arguments) if form is not None else arguments

    def keys(self, call: Call) -> CallKeys:
        """Both keys of a call, its arguments put in canonical form once (a hot path:
        the HTTP form parses and re-encodes the URL)."""
        arguments = self.canonical_arguments(call.channel, call.arguments)
        exact = call_key(call.channel, call.server, call.tool, arguments)
        replay = (
            call_key(call.channel, call.server, call.tool, arguments, self.ignore_arguments)
            if self.ignore_arguments
            else exact
        )
        if self.namespaced:
            replay = namespace_of(call.session_id) + replay
        return CallKeys(replay, exact)

    def replay_key_of_row(self, row: dict[str, Any]) -> str:
        """The replay key of a stored record under the current scheme (for re-keying)."""
        call = Call(row["channel"], row["server"], row["tool"], row["arguments"], row["session"])
        return self.keys(call).replay

    async def lookup(
        self,
        call: Call,
        session: Session,
        *,
        occurrence: int,
        key: str,
        substitute: ReplayAlias | None = None,
        source: ReplaySource | None = None,
    ) -> ReplayHit | ReplayMiss:
        """The recorded answer of `key` for this occurrence; with `substitute`, the
        recording of another value of an echoed argument, with this call's value put in;
        `source`: where to look, whatever the session's or the configured source (a
        virtual server's own recording)."""
        started = time.perf_counter()
        chosen = session.slice(ReplaySources).sessions
        source_session = chosen.get(key)
        if source_session is None:
            if source is None:
                setup = session.episode  # an episode's own recording
                source = ReplaySource(setup.replay_from) if setup is not None and setup.replay_from else self.source
            for candidate in self.visible_keys(key, session.id):
                source_session = await self.store.replay_session(candidate, exclude_session=session.id, source=source)
                if source_session is not None:
                    break
            if source_session is None:
                return await self._no_source(key, session.id, source, occurrence)
            chosen[key] = source_session
        row = await self.store.replay_row(
            self._key_in(key, session.id, source_session), session=source_session, occurrence=occurrence
        )
        if row is None:
            return ReplayMiss(f"the source session made this call fewer than {occurrence} times", has_source=True)
        unservable = _unservable(row, occurrence)
        if unservable is not None:
            return unservable
        recorded = row.observation
        if substitute is not None:
            recorded = substituted(recorded, substitute.recorded, substitute.value)
        observation = Observation(
            content=recorded.content,
            structured=recorded.structured,
            is_error=recorded.is_error,
            provenance=Provenance.REPLAY,
            latency_s=time.perf_counter() - started,
        )
        return ReplayHit(observation, row.record_id)

    async def _no_source(self, key: str, session_id: str, source: ReplaySource, occurrence: int) -> ReplayMiss:
        """No session has a servable answer to the call: why, from the latest that made it
        at all (its answer was simulated, perturbed, truncated or refused), else none did."""
        for candidate in self.visible_keys(key, session_id):
            made = await self.store.replay_session(candidate, exclude_session=session_id, source=source, servable=False)
            if made is None:
                continue
            row = await self.store.replay_row(self._key_in(key, session_id, made), session=made, occurrence=occurrence)
            why = _unservable(row, occurrence) if row is not None else None
            return why or ReplayMiss(
                f"no real answer to occurrence {occurrence} of this call in any earlier session", has_source=True
            )
        where = f"recording {source.recording!r}" if source.recording else "any earlier session"
        return ReplayMiss(f"no call like this in {where}", has_source=False)

    def visible(self, session_id: str, recorded_in: str) -> bool:
        """Whether what session `recorded_in` recorded may be shown to session
        `session_id`: without tokens always; with tokens, from its own namespace or a
        shared one (the same rule for replay and the world model's examples); never
        from a `withheld` session."""
        if self.withheld is not None and self.withheld(recorded_in):
            return False
        if not self.namespaced:
            return True
        theirs = namespace_of(recorded_in)
        return theirs == namespace_of(session_id) or theirs in self.shared

    def visible_namespaces(self, session_id: str) -> tuple[str, ...] | None:
        """The session prefixes whose records session `session_id` may be shown (its
        own, then the shared ones), for store queries; None without tokens (all)."""
        if not self.namespaced:
            return None
        own = namespace_of(session_id)
        return (own, *(prefix for prefix in self.shared if prefix != own)) if own else self.shared

    def visible_keys(self, key: str, session_id: str) -> list[str]:
        """`key` in the caller's namespace, then in each shared namespace: where its
        recordings may come from."""
        own = namespace_of(session_id)
        if not self.shared or not key.startswith(own):
            return [key]
        bare = key[len(own) :]
        return [key, *(prefix + bare for prefix in self.shared if prefix != own)]

    def _key_in(self, key: str, session_id: str, source_session: str) -> str:
        """`key` (the caller's) as the source session's namespace has it."""
        own, theirs = namespace_of(session_id), namespace_of(source_session)
        if not self.shared or own == theirs or not key.startswith(own):
            return key
        return theirs + key[len(own) :]


def _unservable(row: ReplayRow, occurrence: int) -> ReplayMiss | None:
    """Why a source's occurrence may not stand for the real side's answer (records/servable.py); None: it may."""
    if row.provenance not in REPLAYABLE:
        return ReplayMiss(
            f"occurrence {occurrence} in the source was answered by {row.provenance}, not the real side",
            has_source=True,
        )
    if row.perturbed:
        return ReplayMiss(f"occurrence {occurrence} in the source was perturbed", has_source=True)
    if row.observation.truncated:
        return ReplayMiss(f"occurrence {occurrence} in the source was recorded truncated", has_source=True)
    return None


def namespace_of(session_id: str) -> str:
    """The token namespace a (namespaced) session id lives in, as a key prefix: `alice/`."""
    token, slash, _ = session_id.partition("/")
    return f"{token}/" if slash else ""
