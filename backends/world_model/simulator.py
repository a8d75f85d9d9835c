"""The simulated side of an MCP call: session history in, predicted observation out.

Never raises for a model failure: a timeout, an overflow, an empty or invalid
answer, a missing model or a down server each become an error observation
tagged `sim` that names the cause.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from backends.world_model.engine import WorldModelEngine, WorldModelError
from backends.world_model.mcp_prompt import Example, build_mcp_messages
from backends.world_model.parse import InvalidPrediction, parse_json_prediction, parse_prediction
from router.types import Call, Observation, Provenance, Session

log = logging.getLogger("simroute.sim")


class WorldModelSimulator:
    def __init__(
        self,
        engine: WorldModelEngine,
        *,
        tools_for: Callable[[str], list[dict[str, Any]]],
        demonstrations_for: Callable[[Call], list[Example]],
        output_schema_for: Callable[[str, str], dict[str, Any] | None],
        max_tokens: int = 256,
        context_tokens: int = 4096,
        initial_state: Mapping[str, str] | None = None,
        simulation_instruction: Mapping[str, str] | None = None,
        constrained_output: bool = True,
    ) -> None:
        self.engine = engine
        self.tools_for = tools_for
        self.demonstrations_for = demonstrations_for
        self.output_schema_for = output_schema_for
        self.max_tokens = max_tokens
        self.context_tokens = context_tokens
        self.initial_state = dict(initial_state or {})
        self.simulation_instruction = dict(simulation_instruction or {})
        # In-process engines enforce the output schema by grammar; endpoint models
        # are validated and asked once more.
        self.constrained_output = constrained_output

    def messages_for(self, call: Call, session: Session) -> list[dict[str, Any]]:
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
            budget_tokens=self.context_tokens - self.max_tokens,
            count_tokens=self.engine.count_tokens,
        )

    async def simulate(self, call: Call, session: Session, *, deadline_s: float, background: bool = False) -> Observation:
        started = time.monotonic()
        schema = self.output_schema_for(call.server, call.tool)
        attempts = 1 if schema is None or self.constrained_output else 2
        try:
            await self.engine.start()
            messages = self.messages_for(call, session)
            for attempt in range(attempts):
                remaining = deadline_s - (time.monotonic() - started)
                completion = await self.engine.complete(
                    messages,
                    session_id=session.id,
                    deadline_s=remaining,
                    max_tokens=self.max_tokens,
                    json_schema=schema,
                    background=background,
                )
                try:
                    return self._observation(completion.text, schema, time.monotonic() - started)
                except InvalidPrediction:
                    if attempt + 1 == attempts:
                        raise
                    log.info("invalid structured prediction for %s.%s; asking once more", call.server, call.tool)
        except WorldModelError as exc:
            return Observation.error(f"simroute: world model failed: {exc}", Provenance.SIM, time.monotonic() - started)
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _observation(text: str, schema: dict[str, Any] | None, latency_s: float) -> Observation:
        if schema is None:
            return Observation([{"type": "text", "text": parse_prediction(text)}], Provenance.SIM, latency_s=latency_s)
        structured = parse_json_prediction(text, schema)
        # MCP servers send structured results as a JSON text block too.
        block = {"type": "text", "text": json.dumps(structured, indent=2, ensure_ascii=False)}
        return Observation([block], Provenance.SIM, structured=structured, latency_s=latency_s)
