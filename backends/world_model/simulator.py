"""The simulated side of any call: session history in, predicted observation out.

One simulator serves every channel; the call's channel picks the domain (MCP,
Terminal, Web, HTTP) that builds the prompt and shapes the answer.

Never raises for a model failure: a timeout, an overflow, an empty or invalid
answer, a missing model or a down server each become an error observation
tagged `sim` that names the cause.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from backends.world_model.domain import Domain
from backends.world_model.engine import WorldModelEngine, WorldModelError
from backends.world_model.parse import InvalidPrediction, parse_json_prediction, parse_prediction
from router.types import Call, Observation, Provenance, Session

log = logging.getLogger("simroute.sim")


class WorldModelSimulator:
    def __init__(
        self,
        engine: WorldModelEngine,
        *,
        domains: Mapping[str, Domain],
        max_tokens: int | Mapping[str, int] = 256,
        context_tokens: int = 4096,
        constrained_output: bool = True,
    ) -> None:
        self.engine = engine
        self.domains = dict(domains)
        # Per channel where observations differ in size (a page snapshot is longer than a tool result).
        self._max_tokens = max_tokens
        self.context_tokens = context_tokens
        # In-process engines enforce the output schema by grammar; endpoint models
        # are validated and asked once more.
        self.constrained_output = constrained_output

    def max_tokens_for(self, channel: str) -> int:
        if isinstance(self._max_tokens, Mapping):
            return self._max_tokens.get(channel) or self._max_tokens.get("default", 256)
        return self._max_tokens

    def messages_for(self, call: Call, session: Session) -> list[dict[str, Any]]:
        domain = self.domains[call.channel]
        budget = self.context_tokens - self.max_tokens_for(call.channel)
        return domain.messages(call, session, budget_tokens=budget, count_tokens=self.engine.count_tokens)

    async def simulate(self, call: Call, session: Session, *, deadline_s: float, background: bool = False) -> Observation:
        started = time.monotonic()
        domain = self.domains.get(call.channel)
        if domain is None:
            return Observation.error(f"simroute: no world-model domain simulates the {call.channel!r} channel", Provenance.SIM)
        refusal = domain.refusal(call, session)
        if refusal is not None:
            return Observation.error(refusal, Provenance.SIM, time.monotonic() - started)
        schema = domain.output_schema(call)
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
                    max_tokens=self.max_tokens_for(call.channel),
                    json_schema=schema,
                    background=background,
                )
                try:
                    prediction = parse_prediction(completion.text) if schema is None else parse_json_prediction(completion.text, schema)
                except InvalidPrediction:
                    if attempt + 1 == attempts:
                        raise
                    log.info("invalid structured prediction for %s.%s; asking once more", call.server, call.tool)
                    continue
                observation = domain.observation(call, prediction)
                observation.provenance = Provenance.SIM
                observation.latency_s = time.monotonic() - started
                return observation
        except WorldModelError as exc:
            return Observation.error(f"simroute: world model failed: {exc}", Provenance.SIM, time.monotonic() - started)
        raise AssertionError("unreachable")  # pragma: no cover
