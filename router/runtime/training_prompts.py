"""The live world-model prompt code, for `simroute export`: the prompt of an
exported example is built by the simulator the router serves with (the same
domains, options and budget, from the same config), so training and serving
never drift apart. With demonstrations (the default), a prompt shows the recorded
real answers of the same tool the served prompt shows, from other sessions of the
train side only: a test-side session's answer never enters a prompt, so neither
side's lines carry a held-out answer (compare-models grounds its calls the same
way). Without, only the session's own earlier observations of the same call,
which the live prompt also shows, are shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from calls import Call, Observation, Session, Turn
from records.export.examples import Generation
from records.export.options import ExportPlan
from records.store.protocol import RecordStore
from router.config import Config
from router.runtime.example_lookup import ExampleLookup, keyed_lookup, replay_keys
from router.runtime.simulated_side import build_world_model_simulator

# The AgentWorldBench domain each channel's simulation belongs to (an HTTP request is
# put to the model as an MCP-style action: world-model-protocol, Domains).
DOMAINS = {"mcp": "MCP", "shell": "Terminal", "browser": "Web", "http": "MCP"}


class EstimatedTokens:
    """Token counts as the model runners estimate them before a model is loaded (three
    characters a token; an endpoint's server owns its tokenizer): an export loads no model."""

    def count_tokens(self, text: str) -> int:
        return len(text) // 3


class LivePrompts:
    """A `records.export.examples.PromptBuilder` made of the live simulator."""

    def __init__(
        self,
        config: Config,
        store: RecordStore,
        *,
        demonstrations: bool = False,
        withheld: Callable[[str], bool] = lambda session: False,
    ) -> None:
        # The prompt is built synchronously, inside the export's loop: the lookup has no
        # loop to query the store from, and answers what `ready` prefetched (else nothing).
        self.lookup = keyed_lookup(store, replay_keys(config, store, withheld=withheld)) if demonstrations else None
        self.simulator = build_world_model_simulator(
            config, store, EstimatedTokens(), self.lookup or ExampleLookup(store)
        )

    @classmethod
    def for_plan(cls, config: Config, store: RecordStore, plan: ExportPlan) -> LivePrompts:
        """The prompts of `plan`'s export: its demonstrations from its train side only."""
        return cls(config, store, demonstrations=plan.demonstrations, withheld=plan.withheld)

    async def ready(self, call: Call) -> None:
        """Fetches the demonstrations of `call`'s prompt, before `prompt` is asked for it."""
        if self.lookup is not None and self.domain(call.channel) is not None:
            self.lookup.forget()
            await self.lookup.prefetch(call)

    @property
    def generation(self) -> Generation:
        """Where the serving model runner's generation starts: after the prefill the live
        simulator's prompts are made for (world.observation_prefill)."""
        return Generation(prefill=self.simulator.prefill)

    def domain(self, channel: str) -> str | None:
        return DOMAINS.get(channel) if channel in self.simulator.domains else None

    def prompt(self, call: Call, history: Sequence[Turn]) -> list[dict[str, Any]]:
        grounding, messages = self.simulator.grounded_messages(call, Session(id=call.session_id, history=list(history)))
        shown = [
            turn.observation
            for turn in history
            if turn.call.channel == call.channel and turn.call.server == call.server
        ]
        demonstrated = [row.get("observation") or {} for row in grounding.rows]
        return marked(
            messages,
            [str(o.provenance) for o in shown],
            [o.get("provenance", "none") for o in demonstrated],
            sources=([o.source_json() for o in shown], [o.get("source") or None for o in demonstrated]),
        )

    def rendered(self, call: Call, history: Sequence[Turn], observation: Observation) -> str:
        from backends.world_model.grounding import Grounding

        # The observation as the next prompt shows it: its last history turn (no
        # demonstrations after it), rendered by the domain's own code.
        session = Session(id=call.session_id, history=[*history, Turn(call, observation)])
        messages = self.simulator.messages_for(call, session, grounding=Grounding())
        if len(messages) < 3 or messages[-2]["role"] != "assistant":
            raise ValueError(f"the {call.channel} domain's prompt does not end with the turn just added")
        return messages[-2]["content"]


def marked(
    messages: list[dict[str, str]],
    shown: Sequence[str],
    demonstrated: Sequence[str],
    *,
    sources: tuple[Sequence[dict[str, Any] | None], Sequence[dict[str, Any] | None]] = ((), ()),
) -> list[dict[str, Any]]:
    """The prompt's assistant turns with the provenance of the observation each shows,
    and its source where `sources` (of the shown turns, of the demonstrations) names one.
    The demonstrations are the last turns before the action (a prompt that had to
    shrink drops the oldest of them first); before them, the history turns of the
    call's environment (channel and server), the oldest dropped first: both aligned
    from the newest."""
    out: list[dict[str, Any]] = [dict(message) for message in messages]
    assistants = [message for message in out if message["role"] == "assistant"]
    examples = min(len(demonstrated), len(assistants))
    history, shown_examples = assistants[: len(assistants) - examples], assistants[len(assistants) - examples :]
    shown_sources, demonstrated_sources = sources
    for turns, provenances, turn_sources in (
        (shown_examples, demonstrated, demonstrated_sources),
        (history, shown, shown_sources),
    ):
        for message, provenance in zip(reversed(turns), reversed(provenances), strict=False):
            message["provenance"] = provenance
        # Aligned from the newest like the provenances (no sources given: none marked).
        for message, source in zip(reversed(turns), reversed(turn_sources), strict=False):
            if source is not None:
                message["source"] = source
    return out
