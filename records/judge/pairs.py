"""Which records give pairs to judge, read as the export reads them (session by
session, in step order; records/export/).

- A **simulated** pair: a call whose real observation is known and whose world-model
  prediction was recorded beside it (a shadow pair, either side served). The real
  side is the reference, the prediction the candidate. A failure of simroute's own
  (a timeout, a malformed answer) is no prediction.
- A **control** pair: two real answers to the same call (the same `call_key`) from
  two sessions. Scored the same way, it shows what the judge gives two answers that
  are as alike as reality makes them: the score of "indistinguishable".

The targets follow the export's filters and rules (`ExportFilter`; only real
observations are references; a perturbed answer never is). Memory stays bounded:
the first real answer of at most `MAX_OPEN_KEYS` calls waits for its control.
"""

from __future__ import annotations

from dataclasses import dataclass

from calls import Call, Observation
from records.export.examples import real_side, simulated_side
from records.export.options import ExportFilter
from records.record import Record

SIMULATED, CONTROL = "simulated", "control"
KINDS = (SIMULATED, CONTROL)
MAX_OPEN_KEYS = 10_000
_UNSEEN = frozenset({"started", "interrupted"})


@dataclass(frozen=True, slots=True)
class Pair:
    kind: str  # simulated | control
    record: Record  # the record the score is stored under (a control's second answer)
    reference: Observation  # a real observation
    candidate: Observation  # the prediction, or (control) another real answer to the same call
    other: str | None = None  # a control's first record

    @property
    def call(self) -> Call:
        return self.record.call


@dataclass(slots=True)
class _FirstAnswer:
    record_id: str
    session: str
    observation: Observation


class PairFinder:
    """Fed every record of the store, session by session; gives the pairs to judge:
    at most `simulated` simulated pairs and `controls` control pairs (one per call)."""

    def __init__(self, where: ExportFilter, *, simulated: int, controls: int) -> None:
        self.where = where
        self.simulated_left = simulated
        self.controls_left = controls
        self._first: dict[str, _FirstAnswer | None] = {}  # call_key -> its first real answer (None: paired)

    @property
    def done(self) -> bool:
        return self.simulated_left <= 0 and self.controls_left <= 0

    def feed(self, record: Record) -> list[Pair]:
        if record.status in _UNSEEN or not self.where.selects(record):
            return []
        real = real_side(record)
        if real is None or real.truncated:
            return []
        found = []
        predicted = simulated_side(record)
        if predicted is not None and self.simulated_left > 0:
            self.simulated_left -= 1
            found.append(Pair(SIMULATED, record, real, predicted))
        control = self._control(record, real)
        if control is not None:
            found.append(control)
        return found

    def _control(self, record: Record, real: Observation) -> Pair | None:
        if self.controls_left <= 0:
            return None
        key = record.call_key
        if key not in self._first:
            if len(self._first) < MAX_OPEN_KEYS:
                self._first[key] = _FirstAnswer(record.id, record.call.session_id, real)
            return None
        first = self._first[key]
        if first is None or first.session == record.call.session_id:
            return None  # paired already, or the same session (not an independent answer)
        self._first[key] = None
        self.controls_left -= 1
        return Pair(CONTROL, record, first.observation, real, other=first.record_id)
