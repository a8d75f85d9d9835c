"""An example as one JSON line of each export format.

- `agentworldbench`: the layout AgentWorldBench's evaluation reads, one line per
  turn: `system` (the domain's simulation context), `turns` (the prompt's turns,
  each with `turn_idx`, `role` and `content`; the world model's roles: the agent's
  action is the user turn, the environment's observation the assistant turn; an
  assistant turn carries the `provenance` of the observation it shows), `turn_idx`
  (the turn to predict), `answer` (the real observation, in the environment's
  native format), `domain`, and `meta` (where the example came from). A turn, and
  `meta` for the served answer, carry the observation's `source` too when it has
  one (`{sub, model, …}`: calls.Source).
- `messages`: `{"messages": [...], "tools": []}`, the chat layout TRL and most
  fine-tuning stacks read; the last message is the real observation as the serving
  model runner generates it: after the llama.cpp runner's prefilled marker (`meta.prefill`, which
  a stack rendering the chat template puts at the start of that turn), or inside
  `<predicted_observation>` tags for a model runner without prefill, as the prompt's closing
  instruction asks. Earlier
  assistant turns are context: each carries its `provenance` (and `source`) and `weight: 0`
  (stacks that weigh messages train on the last one only). `tools` is empty: the
  world model calls no tools (the environment's tools are in its system message).
- `preference`: `{"prompt", "chosen", "rejected"}` (TRL's conversational preference
  layout): chosen the real observation, rejected the simulated one (its source in
  `meta.rejected_source`, when it has one), both as the model runner generates them.
- `trajectories`: one line per agent session (an episode), written by trajectories.py.
"""

from __future__ import annotations

from typing import Any

from records.export.examples import Example, simulated_side


def meta(example: Example, side: str) -> dict[str, Any]:
    record = example.record
    source = record.served.source_json()
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
        **({"source": source} if source is not None else {}),
        "divergence": record.divergence,
    }


def agentworldbench(example: Example, side: str) -> dict[str, Any]:
    turns = []
    for index, message in enumerate(example.prompt[1:]):
        turn = {"turn_idx": index // 2 + 1, "role": message["role"], "content": message["content"]}
        for key in ("provenance", "source"):
            if key in message:
                turn[key] = message[key]
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
    out.append(
        {"role": "assistant", "content": example.generation.target(example.target), "provenance": "real", "weight": 1}
    )
    return {"messages": out, "tools": [], "meta": {**meta(example, side), "prefill": example.generation.prefill}}


def preference(example: Example, side: str) -> dict[str, Any] | None:
    if example.rejected is None:
        return None
    prompt = [{"role": message["role"], "content": message["content"]} for message in example.prompt]
    simulated = simulated_side(example.record)
    rejected_source = simulated.source_json() if simulated is not None else None
    return {
        "prompt": prompt,
        "chosen": [{"role": "assistant", "content": example.generation.target(example.target)}],
        "rejected": [{"role": "assistant", "content": example.generation.target(example.rejected)}],
        # The rejected answer's source (the model that wrote it), when it names one.
        "meta": {
            **meta(example, side),
            "prefill": example.generation.prefill,
            **({"rejected_source": rejected_source} if rejected_source is not None else {}),
        },
    }


WRITERS = {"agentworldbench": agentworldbench, "messages": messages, "preference": preference}
