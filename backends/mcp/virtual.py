"""A virtual MCP server: declared only in the config (its tools' names, descriptions,
input and output schemas, annotations, and an initial-state document), served to agents
like a real upstream, answered by the world model or, when it is backed by a named
recording, by replay of that recording first.

There is no process and no connection behind it: nothing a virtual server answers
ever reaches the real world, whatever route a policy picks (policies/virtual.py).
"""

from __future__ import annotations

from typing import Any, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import Field, PositiveFloat, field_validator

from backends.options import Strict


def _check_schema(value: dict[str, Any] | None, what: str) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        Draft202012Validator.check_schema(value)
    except SchemaError as exc:
        raise ValueError(f"{what} is not a valid JSON Schema: {exc.message}") from exc
    if value.get("type", "object") != "object":
        raise ValueError(f"{what} must describe an object (`type: object`), not {value.get('type')!r}")
    return value


class VirtualTool(Strict):
    """One tool of a virtual server, in the MCP `tools/list` form."""

    name: str = Field(min_length=1, max_length=128, description="The tool's name, as agents call it.")
    title: str | None = Field(default=None, description="A human-readable title.")
    description: str = Field(default="", description="What the tool does (agents and the world model read it).")
    input_schema: dict[str, Any] = Field(
        default={"type": "object"},
        alias="inputSchema",
        description="JSON Schema of the arguments; a call whose arguments fail it is refused.",
    )
    output_schema: dict[str, Any] | None = Field(
        default=None,
        alias="outputSchema",
        description="JSON Schema of the structured result (simulated answers are held to it).",
    )
    annotations: dict[str, Any] = Field(
        default={}, description="MCP tool annotations, e.g. `readOnlyHint: true` (the safety gate reads them)."
    )

    @field_validator("input_schema")
    @classmethod
    def _input_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        return _check_schema(value, "inputSchema") or {"type": "object"}

    @field_validator("output_schema")
    @classmethod
    def _output_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return _check_schema(value, "outputSchema")

    def definition(self) -> dict[str, Any]:
        """The tool as `tools/list` (and a tool snapshot) has it."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=False)


class VirtualServer(Strict):
    """A server declared only here (`type: virtual`): its tools are listed to agents and
    answered by the world model, or first by replay of a named recording (`recording`).
    No route ever reaches a real side for it."""

    type: Literal["virtual"] = Field(description="Marks the entry as a virtual server.")
    tools: list[VirtualTool] = Field(min_length=1, description="The tools it lists, in the MCP `tools/list` form.")
    initial_state: str | None = Field(
        default=None, description="What the simulated server holds at the start of a session (for the world model)."
    )
    simulation_instruction: str | None = Field(
        default=None, description="Controls for the world model, e.g. `Answer in French.`"
    )
    recording: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "A named recording (`replay.recording`) of a server of this name: its calls are replayed in order; "
            "any other call is simulated."
        ),
    )
    sim_timeout: PositiveFloat | None = Field(
        default=None, description="Simulated-call deadline (s); default: `world_model.deadline_s`."
    )

    @field_validator("tools")
    @classmethod
    def _unique_names(cls, tools: list[VirtualTool]) -> list[VirtualTool]:
        seen: set[str] = set()
        for tool in tools:
            if tool.name in seen:
                raise ValueError(f"tool {tool.name!r} is declared twice")
            seen.add(tool.name)
        return tools

    def definitions(self) -> list[dict[str, Any]]:
        return [tool.definition() for tool in self.tools]
