"""Virtual servers have no real side: what each route means for them.

A virtual MCP server (backends/mcp/virtual.py) is declared only in the config. Its
own answer, the one a real upstream would give, comes from its recording when it is
backed by one (replayed in order), else from the world model. So, for its calls:

- `real` and `shadow` serve that own answer: `replay` of its recording (a call the
  recording does not hold is simulated, provenance `sim`), or `sim` when it has none;
- `replay` replays its recording (or, with none, the configured replay source), and a
  miss is simulated, never sent real;
- `sim` asks the world model; `deny` denies.

Applied after the policy chain (pure, no I/O): whatever a policy chose, a virtual
server's call never goes to a real side. The rewritten decision says so, naming the
policy and the route it replaced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from calls import Call, Decision, Route

_OWN_ANSWER = frozenset({Route.REAL, Route.SHADOW})


@dataclass(frozen=True, slots=True)
class VirtualServers:
    """The virtual MCP servers of a config: name -> the recording backing it (None: none)."""

    recordings: Mapping[str, str | None] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.recordings)

    def is_virtual(self, call: Call) -> bool:
        return call.channel == "mcp" and call.server in self.recordings

    def recording_of(self, call: Call) -> str | None:
        """The recording a virtual server's calls replay from (None: not virtual, or no recording)."""
        return self.recordings.get(call.server) if call.channel == "mcp" else None

    def route(self, call: Call, decision: Decision) -> Decision:
        """`decision` as served for `call`: unchanged unless it would reach a real side
        of a virtual server, which it never does."""
        if decision.route not in _OWN_ANSWER or not self.is_virtual(call):
            return decision
        recording = self.recordings[call.server]
        route = Route.REPLAY if recording is not None else Route.SIM
        answer = (
            f"its recording {recording!r} (unrecorded calls simulated)" if recording is not None else "the world model"
        )
        reason = (
            f"{call.server!r} is a virtual server with no real side: {decision.policy} chose {decision.route} "
            f"({decision.reason}); answered by {answer}"
        )
        # The gate's verdict, a rule's deadline and perturbation plan still apply.
        return dataclasses.replace(
            decision, route=route, policy="virtual", reason=reason, shadow_rate=None, replay_as=None
        )
