"""Tool-definition pins, the rug-pull defence: the checks, its pure part (the stores keep the pins).

An upstream that changes a tool's definition after the agent trusted it can turn
its description into an instruction to the agent, or a harmless tool into one that
writes. On first sight each tool's definition is pinned: a digest of what the agent
reads and the safety classifier judges (name, description, input and output schema,
annotations). Every later listing is compared with the pins (`reconcile`): a tool
whose definition differs is a change, recorded with a diff, and the agent keeps
seeing the pinned definition until a person accepts the new one. What the changed
tool's calls get meanwhile is the configured policy's (`hold`):

- `warn`: nothing more (the change is recorded and shown);
- `block`: the changed tool's calls are refused;
- `rehearse`: every call to the server is simulated (quarantine).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from calls import Decision, Route

PinPolicy = Literal["warn", "block", "rehearse"]
POLICY = "tool-pins"

# What a pin covers: what the agent reads and what the safety classifier judges.
PINNED_FIELDS = ("name", "description", "inputSchema", "outputSchema", "annotations")


def pinned_part(definition: Mapping[str, Any]) -> dict[str, Any]:
    """The pinned fields of a tool definition (absent and null are the same)."""
    return {key: definition[key] for key in PINNED_FIELDS if definition.get(key) is not None}


def pin_digest(definition: Mapping[str, Any]) -> str:
    """The SHA-256 of the pinned fields' canonical JSON (key order does not matter)."""
    body = json.dumps(pinned_part(definition), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(body.encode()).hexdigest()


def changed_fields(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[str, ...]:
    before, after = pinned_part(old), pinned_part(new)
    return tuple(key for key in PINNED_FIELDS if before.get(key) != after.get(key))


def definition_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """A unified diff of the pinned fields, as indented JSON (one line per value)."""
    before = json.dumps(pinned_part(old), indent=2, sort_keys=True, ensure_ascii=False, default=str).splitlines()
    after = json.dumps(pinned_part(new), indent=2, sort_keys=True, ensure_ascii=False, default=str).splitlines()
    return "\n".join(difflib.unified_diff(before, after, "pinned", "listed", lineterm=""))


@dataclass(frozen=True, slots=True)
class Pin:
    """A tool's accepted definition."""

    server: str
    tool: str
    digest: str
    definition: dict[str, Any]
    ts: float

    @classmethod
    def of(cls, server: str, definition: dict[str, Any], *, ts: float) -> Pin:
        return cls(server, str(definition.get("name")), pin_digest(definition), definition, ts)

    def to_row(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "tool": self.tool,
            "digest": self.digest,
            "definition": self.definition,
            "ts": self.ts,
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Pin:
        return cls(str(row["server"]), str(row["tool"]), str(row["digest"]), dict(row["definition"]), float(row["ts"]))


@dataclass(frozen=True, slots=True)
class ToolChange:
    """A listed definition that differs from the tool's pin. `status`: `pending` until a
    person accepts it (`accepted`), or a later change of the same tool supersedes it."""

    server: str
    tool: str
    old_digest: str
    new_digest: str
    fields: tuple[str, ...]
    diff: str
    definition: dict[str, Any]  # the new definition, pinned when accepted
    ts: float
    status: str = "pending"

    def describe(self) -> str:
        return (
            f"tool {self.tool!r} of {self.server!r} changed its {_listed(self.fields)} since it was pinned "
            f"(pin {self.old_digest[:12]}, listed {self.new_digest[:12]})"
        )

    def to_row(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "tool": self.tool,
            "old_digest": self.old_digest,
            "new_digest": self.new_digest,
            "fields": list(self.fields),
            "diff": self.diff,
            "definition": self.definition,
            "ts": self.ts,
            "status": self.status,
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ToolChange:
        return cls(
            str(row["server"]),
            str(row["tool"]),
            str(row["old_digest"]),
            str(row["new_digest"]),
            tuple(row["fields"]),
            str(row["diff"]),
            dict(row["definition"]),
            float(row["ts"]),
            str(row.get("status", "pending")),
        )


def _listed(names: tuple[str, ...]) -> str:
    """("a", "b", "c") -> "a, b and c"."""
    return " and ".join((", ".join(names[:-1]), names[-1])) if len(names) > 1 else "".join(names)


@dataclass(frozen=True, slots=True)
class Reconciled:
    """A listing compared with the pins: what the agent is served (pinned definitions
    for changed tools), the tools seen for the first time, and the changes."""

    served: list[dict[str, Any]]
    first_seen: list[Pin] = field(default_factory=list)
    changes: list[ToolChange] = field(default_factory=list)
    as_pinned: list[str] = field(default_factory=list)  # tools listed exactly as pinned


def reconcile(server: str, pins: Mapping[str, Pin], listed: Sequence[Mapping[str, Any]], *, now: float) -> Reconciled:
    """Compare an upstream's listing with its pins (by tool name). A tool seen for the
    first time is pinned as listed; a tool whose definition differs from its pin is a
    change and is served as pinned; a pinned tool no longer listed is not served."""
    served: list[dict[str, Any]] = []
    first_seen: list[Pin] = []
    changes: list[ToolChange] = []
    as_pinned: list[str] = []
    seen: set[str] = set()
    for entry in listed:
        definition = dict(entry)
        name = str(definition.get("name"))
        if name in seen:  # a listing naming a tool twice: the first is the tool
            continue
        seen.add(name)
        pin = pins.get(name)
        if pin is None:
            first = Pin.of(server, definition, ts=now)
            first_seen.append(first)
            served.append(definition)
            continue
        digest = pin_digest(definition)
        if digest == pin.digest:
            as_pinned.append(name)
            served.append(definition)
            continue
        fields = changed_fields(pin.definition, definition)
        changes.append(
            ToolChange(
                server, name, pin.digest, digest, fields, definition_diff(pin.definition, definition), definition, now
            )
        )
        served.append(dict(pin.definition))
    return Reconciled(served, first_seen, changes, as_pinned)


def hold(policy: PinPolicy, server: str, tool: str, pending: Mapping[str, ToolChange]) -> Decision | None:
    """What a call to `server`'s `tool` gets while `pending` (its server's unaccepted
    changes, by tool) is not empty: None lets it route as usual."""
    if policy == "block" and tool in pending:
        change = pending[tool]
        return Decision(
            Route.DENY,
            POLICY,
            f"{change.describe()}; its calls are refused until a person "
            f"accepts the change (simroute pins accept {server} {tool})",
        )
    if policy == "rehearse" and pending:
        change = pending[tool] if tool in pending else pending[sorted(pending)[0]]
        return Decision(
            Route.SIM,
            POLICY,
            f"server {server!r} is quarantined into rehearsal: {change.describe()}; "
            f"its calls are simulated until a person accepts the change (simroute pins accept {server})",
        )
    return None
