"""The live world-model prompt code, for `simroute export`: the prompt of an
exported example is built by the simulator the router serves with (the same
domains, options and budget, from the same config), so training and serving
never drift apart. Demonstrations from other sessions are left out (the example
lookup has no event loop to query the store from): they would carry answers of
held-out sessions into training prompts. A session's own earlier observations of
the same call, which the live prompt also shows, stay."""

from __future__ import annotations

from collections.abc import Sequence

from router.config import Config
from router.runtime.world import ExampleLookup, build_world_simulator
from router.types import Call, Observation, Session, Turn
from shadow.store.protocol import RecordStore

# The AgentWorldBench domain each channel's simulation belongs to (an HTTP request is
# put to the model as an MCP-style action: world-model-protocol, Domains).
DOMAINS = {"mcp": "MCP", "shell": "Terminal", "browser": "Web", "http": "MCP"}


class EstimatedTokens:
    """Token counts as the engines estimate them before a model is loaded (three
    characters a token; an endpoint's server owns its tokenizer): an export loads no model."""

    def count_tokens(self, text: str) -> int:
        return len(text) // 3


class LivePrompts:
    """A `shadow.export.examples.PromptBuilder` made of the live simulator."""

    def __init__(self, config: Config, store: RecordStore) -> None:
        # No loop: the lookup answers no rows, so no other session's answer is shown.
        self.simulator = build_world_simulator(config, store, EstimatedTokens(), ExampleLookup(store))

    def domain(self, channel: str) -> str | None:
        return DOMAINS.get(channel) if channel in self.simulator.domains else None

    def prompt(self, call: Call, history: Sequence[Turn]) -> list[dict[str, str]]:
        return self.simulator.messages_for(call, Session(id=call.session_id, history=list(history)))

    def rendered(self, call: Call, history: Sequence[Turn], observation: Observation) -> str:
        from backends.world_model.grounding import Grounding

        # The observation as the next prompt shows it: its last history turn (no
        # demonstrations after it), rendered by the domain's own code.
        session = Session(id=call.session_id, history=[*history, Turn(call, observation)])
        messages = self.simulator.messages_for(call, session, grounding=Grounding())
        assert messages[-2]["role"] == "assistant", "a domain's prompt ends with a history turn, then the action"
        return messages[-2]["content"]
