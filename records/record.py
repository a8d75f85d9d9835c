"""A record: one routed call, what was decided, what the agent saw."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from calls import Call, Decision, Observation, Route
from records import record_json

if TYPE_CHECKING:
    from records.redaction import Redactor


def new_record_id() -> str:
    # Time-ordered ids keep inserts append-only and listings sortable.
    return f"{time.time_ns():016x}{uuid.uuid4().hex[:16]}"


@dataclass(slots=True)
class Record:
    call: Call
    decision: Decision
    served: Observation  # what the agent saw
    step: int
    call_key: str
    id: str = field(default_factory=new_record_id)
    ts: float = field(default_factory=time.time)
    # Filled in when the decision changed on the way (e.g. a replay miss went real).
    note: str = ""
    # The other side of a shadowed call, and how far the two diverged.
    shadow: Observation | None = None
    divergence: float | None = None
    divergence_kind: str | None = None  # status | structure | format | content | none
    divergence_evidence: dict[str, Any] | None = None  # {"divergent": [...], "masked": [...], "note": ...}
    # "complete"; "started" (written ahead of a real call with side effects);
    # "pending" (off-path shadow work outstanding); "interrupted" (its router died
    # while it was started).
    status: str = "complete"
    occurrence: int = 0  # the n-th call of `replay_key` in its session
    replay_key: str = ""  # what replay matches on (call_key minus ignored paths)
    key_scheme: str = ""  # the replay-key configuration `replay_key` was made under
    recording: str | None = None  # the named recording the session was recorded into
    owner: str = ""  # the router process that wrote it (host:pid:start-time)
    # Whether the call reads only (`Pending.reads_only`: the front door or the safety
    # gate says so); None in records written before it was kept.
    reads_only: bool | None = None
    # When the call ended (its final record was made); None while it is `started`.
    # With `ts` and `reads_only`, other routers see when it may have written (records/store/server_writes.py).
    ended: float | None = None
    # A perturbation the agent got (`{kind, rule, seed, n}`, router/addons/perturbation/addon.py),
    # and the route's own answer when the perturbation changed it. A perturbed record is
    # never a replay source, a learned-router label or a world-model example.
    perturbation: dict[str, Any] | None = None
    unperturbed: Observation | None = None

    def redacted(self, redactor: Redactor) -> Record:
        """A copy whose call and observations have their secrets replaced by markers (for storage)."""
        return replace(
            self,
            call=redactor.call(self.call),
            served=redactor.observation(self.served, session_id=self.call.session_id),
            shadow=redactor.observation(self.shadow, session_id=self.call.session_id)
            if self.shadow is not None
            else None,
            unperturbed=redactor.observation(self.unperturbed, session_id=self.call.session_id)
            if self.unperturbed is not None
            else None,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ts": self.ts,
            "session": self.call.session_id,
            "step": self.step,
            "channel": self.call.channel,
            "server": self.call.server,
            "tool": self.call.tool,
            "arguments": self.call.arguments,
            "call_key": self.call_key,
            "route": str(self.decision.route),
            "policy": self.decision.policy,
            "reason": self.decision.reason,
            "safety_class": self.decision.safety,
            "safety_reason": self.decision.safety_reason,
            "note": self.note,
            "provenance": str(self.served.provenance),
            "latency_ms": round(self.served.latency_s * 1000, 3),
            "observation": self.served.to_json(),
            "shadow": self.shadow.to_json() if self.shadow else None,
            "divergence": self.divergence,
            "divergence_kind": self.divergence_kind,
            "divergence_evidence": self.divergence_evidence,
            "status": self.status,
            "occurrence": self.occurrence,
            "replay_key": self.replay_key or self.call_key,
            "key_scheme": self.key_scheme,
            "recording": self.recording,
            "owner": self.owner,
            "reads_only": self.reads_only,
            "ended": self.ended,
            **({"perturbation": self.perturbation} if self.perturbation is not None else {}),
            **({"unperturbed": self.unperturbed.to_json()} if self.unperturbed is not None else {}),
        }

    def to_line(self) -> str:
        return record_json.dumps(self.to_json())

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> Record:
        return cls(
            call=Call(row["channel"], row["server"], row["tool"], row["arguments"], row["session"]),
            decision=Decision(
                Route(row["route"]),
                row["policy"],
                row["reason"],
                safety=row.get("safety_class"),
                safety_reason=row.get("safety_reason") or "",
            ),
            served=Observation.from_json(row["observation"]),
            step=row["step"],
            call_key=row["call_key"],
            id=row["id"],
            ts=row["ts"],
            note=row.get("note", ""),
            shadow=Observation.from_json(row["shadow"]) if row.get("shadow") else None,
            divergence=row.get("divergence"),
            divergence_kind=row.get("divergence_kind"),
            divergence_evidence=row.get("divergence_evidence"),
            status=row.get("status", "complete"),
            occurrence=int(row.get("occurrence") or 0),
            replay_key=row.get("replay_key") or row["call_key"],
            key_scheme=row.get("key_scheme") or "",
            recording=row.get("recording"),
            owner=row.get("owner") or "",
            reads_only=row.get("reads_only"),
            ended=row.get("ended"),
            perturbation=row.get("perturbation"),
            unperturbed=Observation.from_json(row["unperturbed"]) if row.get("unperturbed") else None,
        )
