"""The MCP domain: a server's tools as the action space, tool results as observations."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from backends.world_model.domain import CountTokens
from backends.world_model.mcp_prompt import Example, build_mcp_messages
from router.types import Call, Observation, Provenance, Session


class McpDomain:
    def __init__(
        self,
        *,
        tools_for: Callable[[str], list[dict[str, Any]]],
        demonstrations_for: Callable[[Call], list[Example]],
        output_schema_for: Callable[[str, str], dict[str, Any] | None],
        initial_state: Mapping[str, str] | None = None,
        simulation_instruction: Mapping[str, str] | None = None,
    ) -> None:
        self.tools_for = tools_for
        self.demonstrations_for = demonstrations_for
        self.output_schema_for = output_schema_for
        self.initial_state = dict(initial_state or {})
        self.simulation_instruction = dict(simulation_instruction or {})

    def refusal(self, call: Call, session: Session) -> str | None:
        return None  # the front door already checked the arguments against the tool's schema

    def messages(self, call: Call, session: Session, *, budget_tokens: int, count_tokens: CountTokens) -> list[dict[str, str]]:
        history = [
            ({"name": turn.call.tool, "arguments": turn.call.arguments}, turn.observation.text)
            for turn in session.history
            if turn.call.channel == call.channel and turn.call.server == call.server
        ]
        return build_mcp_messages(
            server=call.server,
            tools=self.tools_for(call.server),
            history=history,
            action={"name": call.tool, "arguments": call.arguments},
            demonstrations=self.demonstrations_for(call),
            initial_state=self.initial_state.get(call.server),
            simulation_instruction=self.simulation_instruction.get(call.server),
            budget_tokens=budget_tokens,
            count_tokens=count_tokens,
        )

    def output_schema(self, call: Call) -> dict[str, Any] | None:
        return self.output_schema_for(call.server, call.tool)

    def observation(self, call: Call, prediction: str | dict[str, Any]) -> Observation:
        if isinstance(prediction, str):
            return Observation([{"type": "text", "text": prediction}], Provenance.SIM)
        # MCP servers send structured results as a JSON text block too.
        block = {"type": "text", "text": json.dumps(prediction, indent=2, ensure_ascii=False)}
        return Observation([block], Provenance.SIM, structured=prediction)
