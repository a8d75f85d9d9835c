"""Raw TCP tunnels are refused unless a rule lets one through.

After a CONNECT, bytes that are neither TLS nor HTTP cannot be read, routed,
simulated or replayed: the only sound default is to close the tunnel before any
byte is forwarded, whatever the mode. A rule placed before this policy
(`{match: {channel: http, tool: TCP, server: "host:port"}, route: real}`) opens one.
"""

from __future__ import annotations

from calls import Call, Decision, Route, Session

TCP_TOOL = "TCP"


class TunnelPolicy:
    name = "http-tcp"

    def decide(self, call: Call, session: Session) -> Decision | None:
        if call.channel == "http" and call.tool == TCP_TOOL:
            return Decision(
                Route.DENY,
                self.name,
                f"raw TCP to {call.server} is refused unless a rule lets it through "
                f"({{match: {{channel: http, tool: TCP, server: {call.server!r}}}, route: real}})",
            )
        return None
