"""An example as one JSON line of each export format.

- `agentworldbench`: the layout AgentWorldBench's evaluation reads, one line per
  turn: `system` (the domain's simulation context), `turns` (the prompt's turns,
  each with `turn_idx`, `role` and `content`; the world model's roles: the agent's
  action is the user turn, the environment's observation the assistant turn; an
  assistant turn carries the `provenance` of the observation it shows), `turn_idx`
  (the turn to predict), `answer` (the real observation, in the environment's
  native format), `domain`, and `meta` (where the example came from).
- `messages`: `{"messages": [...], "tools": []}`, the chat layout TRL and most
  fine-tuning stacks read; the last message is the real observation. Earlier
  assistant turns are context: each carries its `provenance` and `weight: 0`
  (stacks that weigh messages train on the last one only). `tools` is empty: the
  world model calls no tools (the environment's tools are in its system message).
- `preference`: `{"prompt", "chosen", "rejected"}` (TRL's conversational preference
  layout): chosen the real observation, rejected the simulated one.
"""

from __future__ import annotations

from typing import Any

from shadow.export.examples import Example


def meta(example: Example, side: str) -> dict[str, Any]:
    record = example.record
    return {
        "record": record.id,
        "session": record.call.session_id,
        "step": record.step,
        "split": side,
        "channel": record.call.channel,
        "server": record.call.server,
        "tool": record.call.tool,
        "route": str(record.decision.route),
        "served": str(record.served.provenance),
        "divergence": record.divergence,
    }


def agentworldbench(example: Example, side: str) -> dict[str, Any]:
    turns = []
    for index, message in enumerate(example.prompt[1:]):
        turn = {"turn_idx": index // 2 + 1, "role": message["role"], "content": message["content"]}
        if "provenance" in message:
            turn["provenance"] = message["provenance"]
        turns.append(turn)
    return {
        "domain": example.domain,
        "system": example.prompt[0]["content"],
        "turns": turns,
        "turn_idx": turns[-1]["turn_idx"],
        "answer": example.answer,
        "meta": meta(example, side),
    }


def messages(example: Example, side: str) -> dict[str, Any]:
    out = []
    for message in example.prompt:
        if message["role"] == "assistant":
            out.append({**message, "weight": 0})
        else:
            out.append({"role": message["role"], "content": message["content"]})
    out.append({"role": "assistant", "content": example.target, "provenance": "real", "weight": 1})
    return {"messages": out, "tools": [], "meta": meta(example, side)}


def preference(example: Example, side: str) -> dict[str, Any] | None:
    if example.rejected is None:
        return None
    prompt = [{"role": message["role"], "content": message["content"]} for message in example.prompt]
    return {
        "prompt": prompt,
        "chosen": [{"role": "assistant", "content": example.target}],
        "rejected": [{"role": "assistant", "content": example.rejected}],
        "meta": meta(example, side),
    }


WRITERS = {"agentworldbench": agentworldbench, "messages": messages, "preference": preference}
