"""Which recorded sessions `simroute compare-models` holds out, and which calls of
them it asks the candidates to simulate. Pure.

Held out: the sessions named, the sessions of an exported `agentworldbench`
test split (its lines name their session), or the test side of the seeded split
`simroute export` makes (the same seed and fraction, the same sessions). The
held-out sessions are withheld from the world model's examples: a call is
grounded in the training side only."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from calls import Observation
from records.export.options import SessionSplit
from records.record import Record

# Records whose observation the agent saw (`simroute export`'s default statuses).
SEEN = ("complete", "pending", "skipped")


@dataclass(frozen=True, slots=True)
class HeldOut:
    """Either named sessions (`sessions`) or the test side of `split`."""

    sessions: frozenset[str] | None = None
    split: SessionSplit | None = None

    def __post_init__(self) -> None:
        if (self.sessions is None) == (self.split is None):
            raise ValueError("held-out sessions are named or split off, not both")
        if self.sessions is not None and not self.sessions:
            raise ValueError("no held-out session named")

    def withheld(self, session: str) -> bool:
        if self.sessions is not None:
            return session in self.sessions
        assert self.split is not None
        return self.split.side(session) == "test"

    def describe(self) -> dict[str, object]:
        if self.sessions is not None:
            return {"by": "name", "named": sorted(self.sessions)}
        assert self.split is not None
        return {"by": "split", "seed": self.split.seed, "test_fraction": self.split.test_fraction}


def sessions_of_split(path: Path) -> frozenset[str]:
    """The sessions an exported `agentworldbench` (or `messages`) split file names in
    its lines' `meta.session`. Raises ValueError naming the line that has none."""
    sessions: set[str] = set()
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                session = json.loads(line)["meta"]["session"]
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not an exported line with meta.session") from exc
            if not isinstance(session, str) or not session:
                raise ValueError(f"{path}:{number}: meta.session is not a session id")
            sessions.add(session)
    if not sessions:
        raise ValueError(f"{path}: no exported lines")
    return frozenset(sessions)


def real_answer(record: Record) -> Observation | None:
    """The real observation a held-out call is measured against: what the agent was
    served when it was real, else the shadow's real side; None when the call has no
    unperturbed real answer (a perturbed answer is never a target)."""
    if record.perturbation is not None or record.status not in SEEN:
        return None
    if str(record.served.provenance) == "real":
        return record.served
    if record.shadow is not None and str(record.shadow.provenance) == "real":
        return record.shadow
    return None
