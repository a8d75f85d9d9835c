"""A call between its decision and its record (`Pending`), and what the engine
returns for it (`Outcome`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from backends.replay import CallKeys
from calls import Call, Decision, Observation, Perturbation, Session, Steer
from records.record import Record, new_record_id


@dataclass(slots=True)
class Outcome:
    observation: Observation
    record: Record


@dataclass(slots=True)
class Pending:
    """A decided call waiting for its observation."""

    call: Call
    session: Session
    decision: Decision
    occurrence: int
    keys: CallKeys
    stored_call: Call  # the call as records, keys and the world model see it: secrets redacted
    step: int = 0
    read_only: bool = False
    record_id: str = field(default_factory=new_record_id)
    ts: float = field(default_factory=time.time)
    route_note: str = ""
    needs_real: bool = False
    written_ahead: bool = False
    in_flight: bool = False  # counted in its session's calls in flight (begun, not complete)
    # What a perturbation plan decided for the call (router/addons/perturbation/addon.py), and
    # the route's own answer when the perturbation changed it (kept in the record).
    perturbation: Perturbation | None = None
    unperturbed: Observation | None = None
    # A paginated listing's page a follow-up call's cursor asked for (from session state).
    page: Observation | None = None
    # What the sim route's own answer is steered by (a listing to paginate is asked whole).
    steer: Steer | None = None
    # What the record will say: its status ("complete"; "pending" while shadow work is
    # outstanding, "skipped" when it could not be queued), and whether the answer is
    # withheld (its record could not be written).
    status: str = "complete"
    withheld: bool = False
    # The shadow side when it is known as the call is answered (the session's world state
    # answers it, no model call: router/addons/shadow_sampling.py); stored with the pending
    # record, so whichever process completes the comparison compares it as it is.
    shadow: Observation | None = None
    # The call's trace span (router/addons/tracing.py; None: tracing off): the parent of
    # what the call causes (the real request, its shadow work; router/engine/trace_context.py).
    span: Any = None
    # The addons whose `before_real` ran, told `after_real` (router/engine/addons.py).
    entered: list[Any] = field(default_factory=list)
    # What addons keep about the call between its events (router/engine/addons.py),
    # each under keys of its own; mitmproxy's flow.metadata.
    metadata: dict[str, Any] = field(default_factory=dict)

    def reads_only(self) -> bool:
        """Whether the call reads only, as far as anything knows: the front door (MCP
        readOnlyHint, HTTP GET/HEAD/OPTIONS) or the safety gate (class `safe`)."""
        return self.read_only or self.decision.safety == "safe"

    def known_read_only(self) -> bool:
        """Whether the call may be made again unasked (a noise probe): the front door
        says it reads only and the safety gate found nothing that writes."""
        return self.read_only and self.decision.safety in (None, "safe")
