"""A record: one routed call, what was decided, what the agent saw."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from router.types import Call, Decision, Observation, Route


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
    status: str = "complete"  # "pending" while off-path shadow work is outstanding

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
            "note": self.note,
            "provenance": str(self.served.provenance),
            "latency_ms": round(self.served.latency_s * 1000, 3),
            "observation": self.served.to_json(),
            "shadow": self.shadow.to_json() if self.shadow else None,
            "divergence": self.divergence,
            "status": self.status,
        }

    def to_line(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, default=str)

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> Record:
        return cls(
            call=Call(row["channel"], row["server"], row["tool"], row["arguments"], row["session"]),
            decision=Decision(Route(row["route"]), row["policy"], row["reason"]),
            served=Observation.from_json(row["observation"]),
            step=row["step"],
            call_key=row["call_key"],
            id=row["id"],
            ts=row["ts"],
            note=row.get("note", ""),
            shadow=Observation.from_json(row["shadow"]) if row.get("shadow") else None,
            divergence=row.get("divergence"),
            status=row.get("status", "complete"),
        )
