"""The `world_state` section: each session's world kept outside the world model (a
shell's files, working directory and variables; JSON APIs' resources over HTTP; MCP
answers aligned with recorded sessions), answering simulated calls it determines
before the model is asked."""

from __future__ import annotations

from pydantic import Field, field_validator

from backends.options import Strict

_CHANNELS = ("shell", "http", "mcp")


class WorldStateConfig(Strict):
    """Simulated calls are answered from the session's world state where it determines the
    answer (`state`: a shell's files, a JSON API's resources), from a recorded real session that made the same calls
    (`replay-aligned`, MCP), and by the world model, given the state a call touches,
    only for the rest."""

    enabled: bool = Field(
        default=True, description="Keep each session's world state and answer simulated calls from it."
    )
    mcp_alignment: bool = Field(
        default=True,
        description=(
            "Answer a simulated MCP call from a recorded real session that made the same calls under a renaming of "
            "their values (`replay-aligned`), before the model."
        ),
    )
    exclude: list[str] = Field(
        default=[],
        description="Where it stays off: a channel (`shell`, `http`, `mcp`), an MCP server (`mcp/NAME`) or an HTTP API "
        "(`http/HOST` or `http/HOST:PORT`, as calls name it); those calls go to the model.",
    )

    @field_validator("exclude")
    @classmethod
    def _known_places(cls, places: list[str]) -> list[str]:
        for place in places:
            channel, _, server = place.partition("/")
            if channel not in _CHANNELS or (channel == "shell" and server):
                raise ValueError(
                    f"{place!r} is not a channel ({', '.join(_CHANNELS)}), "
                    "an MCP server (mcp/NAME) or an HTTP API (http/HOST)"
                )
        return places

    def on_for(self, channel: str, server: str) -> bool:
        """Whether the world state answers and learns for calls of (channel, server)."""
        if not self.enabled or channel in self.exclude or f"{channel}/{server}" in self.exclude:
            return False
        return channel != "mcp" or self.mcp_alignment
