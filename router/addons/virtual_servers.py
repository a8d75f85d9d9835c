"""The virtual-servers addon: whatever a policy chose, a virtual MCP server's call
never goes to a real side (policies/virtual.py says what each route means for it).
The decision is rewritten when the call is decided, naming the policy and the route
it replaced; the replay route serves a virtual server's own recording
(router/engine/replay_modes.py)."""

from __future__ import annotations

from policies.virtual import VirtualServers
from router.engine.addons import CallAddon
from router.engine.pending import Pending


class VirtualServerRoutes(CallAddon):
    def __init__(self, virtual: VirtualServers) -> None:
        self.virtual = virtual

    async def decided(self, pending: Pending) -> None:
        pending.decision = self.virtual.route(pending.call, pending.decision)
