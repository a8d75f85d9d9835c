"""Which records an export turns into examples, and the split of sessions into
train and test. Pure: parsed and validated when built, then asked per record."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from records.record import Record

# The world model's training data, written by default; `trajectories` (the agent's
# episodes, for agent SFT and RL) when asked for.
DEFAULT_FORMATS = ("agentworldbench", "messages", "preference")
FORMATS = (*DEFAULT_FORMATS, "trajectories")
STATUSES = ("complete", "pending", "skipped", "started", "interrupted")
# `fork` selects records a fork answered: their targets still come only from a real
# observation (a fork's answer is never one: records/export/examples.py).
PROVENANCES = ("real", "sim", "replay", "fork", "none")
SPLITS = ("train", "test")


@dataclass(frozen=True, slots=True)
class ExportFilter:
    """Which records are exported as examples. The history a prompt shows is the
    session's whole history whatever the filter: a filter picks targets, not context."""

    since: float | None = None
    until: float | None = None
    channel: str | None = None
    server: str | None = None
    tool: str | None = None
    session: str | None = None
    # Only shadowed calls whose two sides diverged at least this much (the stored,
    # noise-masked divergence): the hard cases.
    min_divergence: float | None = None
    statuses: tuple[str, ...] = ("complete", "pending", "skipped")  # those whose observation the agent saw
    # The provenance of what the agent was served (the target is always a real observation).
    provenances: tuple[str, ...] = ()
    # Token namespaces (`alice` exports sessions `alice/...` only); empty: every session.
    tokens: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for status in self.statuses:
            if status not in STATUSES:
                raise ValueError(f"unknown status {status!r} (one of {', '.join(STATUSES)})")
        for provenance in self.provenances:
            if provenance not in PROVENANCES:
                raise ValueError(f"unknown provenance {provenance!r} (one of {', '.join(PROVENANCES)})")
        if self.min_divergence is not None and not 0.0 <= self.min_divergence <= 1.0:
            raise ValueError(f"the divergence threshold must be within 0..1, got {self.min_divergence}")
        if self.since is not None and self.until is not None and self.until < self.since:
            raise ValueError("the time range ends before it starts")
        for token in self.tokens:
            if not token or "/" in token:
                raise ValueError(f"a token namespace is a token's name without '/', got {token!r}")

    @property
    def prefixes(self) -> tuple[str, ...]:
        """The session id prefixes to read ('' : every session)."""
        return tuple(f"{token}/" for token in self.tokens) or ("",)

    def in_scope(self, session: str) -> bool:
        return not self.tokens or any(session.startswith(prefix) for prefix in self.prefixes)

    def selects(self, record: Record) -> bool:
        """Whether `record` is one the export is asked for (its target still has to be real)."""
        call = record.call
        if self.since is not None and record.ts < self.since:
            return False
        if self.until is not None and record.ts >= self.until:
            return False
        for wanted, value in ((self.channel, call.channel), (self.server, call.server), (self.tool, call.tool)):
            if wanted is not None and value != wanted:
                return False
        if self.session is not None and call.session_id != self.session:
            return False
        if record.status not in self.statuses:
            return False
        if self.provenances and str(record.served.provenance) not in self.provenances:
            return False
        return self.min_divergence is None or (
            record.divergence is not None and record.divergence >= self.min_divergence
        )

    def describe(self) -> dict[str, Any]:
        return {name: list(value) if isinstance(value, tuple) else value for name, value in asdict(self).items()}


@dataclass(frozen=True, slots=True)
class SessionSplit:
    """A seeded split by session: a session's side is a hash of the seed and its id,
    so one session is never on both sides, the same seed gives the same split, and
    nothing has to be remembered to keep it (memory stays flat)."""

    test_fraction: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.test_fraction <= 1.0:
            raise ValueError(f"the test fraction must be within 0..1, got {self.test_fraction}")

    def side(self, session: str) -> str:
        digest = hashlib.sha256(f"{self.seed}\0{session}".encode()).digest()
        return "test" if int.from_bytes(digest[:8], "big") / 2**64 < self.test_fraction else "train"


@dataclass(frozen=True, slots=True)
class ExportPlan:
    formats: Sequence[str] = DEFAULT_FORMATS
    filter: ExportFilter = field(default_factory=ExportFilter)
    split: SessionSplit = field(default_factory=SessionSplit)
    # Each file's lines by divergence, the largest first (records/export/lines.py);
    # otherwise in session order, as they are read.
    hardest_first: bool = False
    # Prompts show the recorded answers of the same tool the served prompt shows
    # (demonstrations), from the exported namespaces' train-side sessions only; off: the
    # session's own turns only.
    demonstrations: bool = True

    def withheld(self, session: str) -> bool:
        """Whether `session`'s answers are kept out of every prompt: the test side's, and
        those of a token namespace the export was not asked for (a shared one included)."""
        return not self.filter.in_scope(session) or self.split.side(session) == "test"

    def __post_init__(self) -> None:
        if not self.formats:
            raise ValueError("no format asked for")
        for name in self.formats:
            if name not in FORMATS:
                raise ValueError(f"unknown format {name!r} (one of {', '.join(FORMATS)})")
