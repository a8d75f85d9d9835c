"""An MCP server entry of the config file: stdio (`command`) or remote (`url`), as in
Claude Desktop, Cursor and VS Code configs. The upstream pool opens sessions to them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, PositiveFloat, Tag

from backends.options import Strict


class StdioServer(Strict):
    command: str = Field(min_length=1)
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    timeout: PositiveFloat | None = None  # real-call deadline (s); default: call_timeout_s
    sim_timeout: PositiveFloat | None = None  # simulated-call deadline (s); default: world_model.deadline_s
    type: Literal["stdio"] | None = None  # VS Code's form names the transport


class RemoteServer(Strict):
    url: str = Field(min_length=1)
    headers: dict[str, str] = {}
    timeout: PositiveFloat | None = None
    sim_timeout: PositiveFloat | None = None
    type: Literal["http", "streamable-http", "sse"] | None = None


def _server_kind(value: Any) -> str:
    if isinstance(value, dict):
        if "url" in value or value.get("type") in ("http", "streamable-http", "sse"):
            return "remote"
        return "stdio"
    return "remote" if isinstance(value, RemoteServer) else "stdio"


# A server entry is stdio (`command`) or remote (`url`), as in Claude Desktop,
# Cursor and VS Code configs.
ServerSpec = Annotated[
    Annotated[StdioServer, Tag("stdio")] | Annotated[RemoteServer, Tag("remote")],
    Discriminator(_server_kind),
]
