"""Front names <-> upstream names: with several upstreams, a tool or prompt `name` of
server `s` is `s_name` to the agent, and a resource `scheme://path` is
`scheme://s/path` (router/mcp/reads.py)."""

from __future__ import annotations

from collections.abc import Sequence


class ToolNames:
    """Front names <-> (server, upstream tool name). One upstream: names unchanged;
    several: `server_tool`."""

    def __init__(self, servers: Sequence[str]) -> None:
        self.servers = list(servers)
        self.prefixed = len(self.servers) > 1
        # Longest first, so server "a_b" wins over server "a" for "a_b_tool".
        self._by_length = sorted(self.servers, key=len, reverse=True)

    def split(self, name: str) -> tuple[str, str] | None:
        if not self.prefixed:
            return (self.servers[0], name) if self.servers else None
        for server in self._by_length:
            if name.startswith(server + "_") and len(name) > len(server) + 1:
                return server, name[len(server) + 1 :]
        return None
