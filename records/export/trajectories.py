"""The `trajectories` format: one line per agent session (an episode), the agent's
side of it, for agent SFT and offline RL.

    {"messages": [
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_<record>", "type": "function",
            "function": {"name": "echo", "arguments": "{\"text\": \"hi\"}"}}]},
        {"role": "tool", "tool_call_id": "call_<record>", "name": "echo", "content": "hi",
            "provenance": "real", "route": "real", "is_error": false, "infra_error": false},
        …],
     "reward": 1.0, "infra_error": false,
     "meta": {"session", "episode_id", "split", "steps", "routes", "provenances", "verifier"}}

The layout is OpenAI's and TRL's conversational tool calling: each call the agent made
is an assistant turn holding one tool call, its answer a `tool` turn naming the call.
`arguments` is the JSON text of the call's arguments, as OpenAI's API writes it: Arrow
(Hugging Face `datasets`) would otherwise merge every tool's argument names into one
struct and give each call the others' names as nulls; `json.loads` it for a chat
template that wants a dict. A tool turn carries the provenance of what the agent was
shown (`real`, `sim`, `replay`, or `none`: simroute's own answer) and whether it was a
failure of simroute or a backend (`infra_error`: a training loop drops or reweights
those). The episode's reward is its last verify's (null: never verified); simroute's
own remarks on the episode (verify, close) are not agent turns.

A trajectory is the whole session: the record filters (channel, tool, divergence…)
pick world-model examples, not parts of an episode.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from calls import Provenance
from records.record import Record

# Calls simroute records about an episode (verify, close) rather than calls the agent made.
EPISODE_CHANNEL = "episode"
# The text simroute's own failure answers start with (router/episodes/episode.py says the same).
FAILURE_PREFIX = "simroute:"
# Policies whose refusals are simroute's capacity or failure, not the agent's doing.
INFRA_POLICIES = frozenset({"engine", "sessions"})
_UNSEEN = frozenset({"started", "interrupted"})


def infra_error(record: Record) -> bool:
    """Whether a step's answer was a failure of simroute or a backend (the world model's
    included), not of the agent's action."""
    served = record.served
    if not served.is_error:
        return False
    if record.decision.policy in INFRA_POLICIES:
        return True
    return served.provenance in (Provenance.NONE, Provenance.SIM) and served.text.startswith(FAILURE_PREFIX)


def episode_id(session: str) -> str | None:
    """The episode a session belongs to (`episode-<id>`, in a token's namespace or not)."""
    _, found, rest = session.rpartition("episode-")
    return rest if found and rest else None


class Trajectory:
    """Fed a session's records in step order; gives its line."""

    def __init__(self, session: str) -> None:
        self.session = session
        self.messages: list[dict[str, Any]] = []
        self.reward: float | None = None
        self.verifier: str | None = None
        self.infra_error = False
        self.routes: Counter[str] = Counter()
        self.provenances: Counter[str] = Counter()

    def feed(self, record: Record) -> None:
        if record.status in _UNSEEN:
            return  # no answer reached the agent
        call = record.call
        if call.channel == EPISODE_CHANNEL:
            structured = record.served.structured or {}
            if call.tool == "verify" and isinstance(structured.get("reward"), int | float):
                self.reward = float(structured["reward"])
                self.verifier = structured.get("verifier") if isinstance(structured.get("verifier"), str) else None
            return
        name, arguments = _action(record)
        call_id = f"call_{record.id}"
        failed = infra_error(record)
        self.infra_error = self.infra_error or failed
        provenance = str(record.served.provenance)
        self.routes[str(record.decision.route)] += 1
        self.provenances[provenance] += 1
        self.messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)},
                    }
                ],
            }
        )
        tool_turn: dict[str, Any] = {
            "role": "tool",
            "tool_call_id": call_id,
            "name": name,
            "content": record.served.text,
            "provenance": provenance,
            "route": str(record.decision.route),
            "is_error": record.served.is_error,
            "infra_error": failed,
        }
        if (source := record.served.source_json()) is not None:
            tool_turn["source"] = source
        self.messages.append(tool_turn)

    def line(self, side: str) -> dict[str, Any] | None:
        """The session's line (None: the agent made no call)."""
        if not self.messages:
            return None
        return {
            "messages": self.messages,
            "reward": self.reward,
            "infra_error": self.infra_error,
            "meta": {
                "session": self.session,
                "episode_id": episode_id(self.session),
                "split": side,
                "steps": len(self.messages) // 2,
                "verifier": self.verifier,
                "routes": dict(sorted(self.routes.items())),
                "provenances": dict(sorted(self.provenances.items())),
            },
        }


def _action(record: Record) -> tuple[str, dict[str, Any]]:
    """The tool call as the agent made it: an MCP, shell or browser tool by its name; an
    HTTP request as the episode's `http_request` tool (its method and arguments)."""
    call = record.call
    if call.channel == "http":
        return "http_request", {"method": call.tool, **call.arguments}
    return call.tool, dict(call.arguments)
