"""An MCP server entry of the config file: stdio (`command`) or remote (`url`), as in
Claude Desktop, Cursor and VS Code configs, or virtual (`type: virtual`, declared only
here: backends/mcp/virtual.py). The upstream pool opens sessions to the real ones."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, PositiveFloat, Tag

from backends.mcp.virtual import VirtualServer
from backends.options import Strict


class StdioServer(Strict):
    """A server simroute starts and talks to over stdio (`command`)."""

    command: str = Field(min_length=1, description="The program that runs the server.")
    args: list[str] = Field(default=[], description="Its arguments.")
    env: dict[str, str] = Field(default={}, description="Environment variables for it.")
    cwd: str | None = Field(default=None, description="Its working directory.")
    timeout: PositiveFloat | None = Field(
        default=None, description="Real-call deadline (s) for this server; default: `call_timeout_s`."
    )
    sim_timeout: PositiveFloat | None = Field(
        default=None, description="Simulated-call deadline (s); default: `world_model.deadline_s`."
    )
    type: Literal["stdio"] | None = Field(default=None, description="VS Code's form names the transport.")
    state: list[str] = Field(
        default=[],
        description=(
            "Paths holding the server's local state (a repository, a database file): with `fork` routes, "
            "a session's fork of the server runs with a copy of them bound over the originals, "
            "in its own mount and network namespace."
        ),
    )
    stateful: bool = Field(
        default=False,
        description=(
            "It keeps state per session (notes, a cart, a login): with several replicas, "
            "another replica answers a session's calls with an error naming the lost upstream "
            "instead of starting it empty."
        ),
    )


class RemoteServer(Strict):
    """A server reached over the network (`url`): streamable HTTP, or SSE with `type: sse`."""

    url: str = Field(min_length=1, description="The server's URL (streamable HTTP, or SSE with `type: sse`).")
    headers: dict[str, str] = Field(default={}, description="HTTP headers sent with every request.")
    timeout: PositiveFloat | None = Field(
        default=None, description="Real-call deadline (s) for this server; default: `call_timeout_s`."
    )
    sim_timeout: PositiveFloat | None = Field(
        default=None, description="Simulated-call deadline (s); default: `world_model.deadline_s`."
    )
    type: Literal["http", "streamable-http", "sse"] | None = Field(
        default=None, description="The transport: `http` / `streamable-http` or `sse`."
    )
    stateful: bool = Field(
        default=False,
        description=(
            "It keeps state per session (notes, a cart, a login): with several replicas, "
            "another replica answers a session's calls with an error naming the lost upstream "
            "instead of starting it empty."
        ),
    )


def _server_kind(value: Any) -> str:
    if isinstance(value, dict):
        if value.get("type") == "virtual" or ("tools" in value and "command" not in value and "url" not in value):
            return "virtual"
        if "url" in value or value.get("type") in ("http", "streamable-http", "sse"):
            return "remote"
        return "stdio"
    if isinstance(value, VirtualServer):
        return "virtual"
    return "remote" if isinstance(value, RemoteServer) else "stdio"


# A server entry is stdio (`command`) or remote (`url`), as in Claude Desktop,
# Cursor and VS Code configs, or virtual (`type: virtual`).
ServerSpec = Annotated[
    Annotated[StdioServer, Tag("stdio")]
    | Annotated[RemoteServer, Tag("remote")]
    | Annotated[VirtualServer, Tag("virtual")],
    Discriminator(_server_kind),
]
# The servers simroute connects to (the upstream pool's).
RealServerSpec = StdioServer | RemoteServer
