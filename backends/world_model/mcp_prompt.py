"""Messages for the MCP domain, in the layout the world models were trained on.

system   = task + action space (the server's tools) + initial state + simulation instruction
then     = (user action, assistant observation) per earlier step with this server
last     = demonstrations (real observations of the same tool, best last),
           the current action, and the tagged-answer instruction.

Demonstrations live in the last turn only, so the system + history prefix stays
byte-identical from one step to the next and an engine's prefix cache holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

Action = dict[str, Any]  # {"name": ..., "arguments": {...}}
Example = tuple[Action, str]  # (action, observation text)

TASK = (
    "You are the MCP server \"{server}\". An AI agent is calling your tools. For each action, "
    "predict exactly what this server returns: the same format, fields and style as the real server, "
    "with values consistent with everything returned earlier in this session. Invalid arguments get "
    "the error the real server would give."
)
CLOSING = (
    "Think about what the real server would return for this action, then write the observation "
    "itself inside <predicted_observation></predicted_observation>, in the server's native format."
)
OMITTED = "[{count} earlier turns omitted]"


def render_action(action: Action, turn: int) -> str:
    body = json.dumps({"name": action["name"], "arguments": action.get("arguments", {})}, indent=2, ensure_ascii=False)
    return f"### Turn {turn}\n**Action:**\n```json\n{body}\n```"


def render_observation(observation: str) -> str:
    return f"**Environment Observation:**\n{observation}"


def build_system(
    server: str,
    tools: Sequence[dict[str, Any]],
    *,
    initial_state: str | None = None,
    simulation_instruction: str | None = None,
) -> str:
    parts = [TASK.format(server=server), "## Tools\n```json\n" + json.dumps(list(tools), indent=2, ensure_ascii=False) + "\n```"]
    if initial_state:
        parts.append("## Initial state\n" + initial_state.strip())
    if simulation_instruction:
        parts.append("## Simulation instruction\n" + simulation_instruction.strip())
    return "\n\n".join(parts)


def build_final_turn(action: Action, turn: int, demonstrations: Sequence[Example]) -> str:
    parts = []
    if demonstrations:
        parts.append("Real observations this server returned for the same tool:")
        for example_action, example_observation in demonstrations:
            parts.append(
                "**Example action:**\n```json\n"
                + json.dumps({"name": example_action["name"], "arguments": example_action.get("arguments", {})}, indent=2, ensure_ascii=False)
                + "\n```\n"
                + render_observation(example_observation)
            )
    parts.append(render_action(action, turn))
    parts.append(CLOSING)
    return "\n\n".join(parts)


def trim_tools(tools: Sequence[dict[str, Any]], called: str, level: int) -> list[dict[str, Any]]:
    """Tool definitions at a trim level: 0 all; 1 other tools without schemas;
    2 other tools by name only; 3 the called tool alone. The called tool is never cut."""
    trimmed = []
    for tool in tools:
        if tool.get("name") == called or level == 0:
            trimmed.append(tool)
        elif level == 1:
            trimmed.append({k: v for k, v in tool.items() if k in ("name", "description")})
        elif level == 2:
            trimmed.append({"name": tool.get("name")})
    return trimmed


def build_mcp_messages(
    *,
    server: str,
    tools: Sequence[dict[str, Any]],
    history: Sequence[Example],
    action: Action,
    demonstrations: Sequence[Example] = (),
    initial_state: str | None = None,
    simulation_instruction: str | None = None,
    budget_tokens: int | None = None,
    count_tokens: Callable[[str], int] = lambda text: len(text) // 3,
) -> list[dict[str, str]]:
    """The chat messages for one simulated MCP call, fitted to `budget_tokens`:
    first the other tools' definitions shrink, then the oldest turns go (with a marker)."""
    turns = list(history)
    for level in range(4):
        system = build_system(server, trim_tools(tools, action["name"], level), initial_state=initial_state, simulation_instruction=simulation_instruction)
        messages = _assemble(system, turns, action, demonstrations, omitted=0)
        if budget_tokens is None or _size(messages, count_tokens) <= budget_tokens:
            return messages
    # Oldest turns go in chunks, not one per step: a window sliding by one turn
    # would change the first history message at every step, and the engine would
    # re-read the whole history each time. Omitting a multiple of a chunk keeps the
    # prefix byte-identical until the next chunk has to go.
    needed = next((k for k in range(1, len(turns) + 1) if _fits(system, turns[k:], action, demonstrations, k, budget_tokens, count_tokens)), len(turns))
    chunk = _chunk(len(turns) - needed)
    omitted = min(len(turns), -(-needed // chunk) * chunk)
    kept = turns[omitted:]
    messages = _assemble(system, kept, action, demonstrations, omitted=omitted)
    if _size(messages, count_tokens) <= budget_tokens:
        return messages
    # Even with no history it does not fit: fewer demonstrations (the best, last,
    # stays), then the best one cut short.
    examples = list(demonstrations)
    while len(examples) > 1 and _size(messages, count_tokens) > budget_tokens:
        examples.pop(0)
        messages = _assemble(system, kept, action, examples, omitted=omitted)
    if examples and _size(messages, count_tokens) > budget_tokens:
        example_action, text = examples[-1]
        excess = _size(messages, count_tokens) - budget_tokens
        keep = max(0, len(text) - int(excess * len(text) / max(1, count_tokens(text))) - 64)
        examples[-1] = (example_action, text[:keep] + f"\n[{len(text) - keep} characters cut]")
        messages = _assemble(system, kept, action, examples, omitted=omitted)
    return messages  # the engine reports the overflow if even this does not fit


def _fits(system: str, turns: Sequence[Example], action: Action, demonstrations: Sequence[Example], omitted: int, budget: int, count_tokens: Callable[[str], int]) -> bool:
    return _size(_assemble(system, turns, action, demonstrations, omitted=omitted), count_tokens) <= budget


def _chunk(kept_turns: int) -> int:
    """Turns dropped at once: half of what fits or a little less (a power of two,
    so it stays the same from step to step while turn sizes wobble)."""
    half = max(1, kept_turns // 2)
    return 1 << (half.bit_length() - 1)


def _assemble(system: str, turns: Sequence[Example], action: Action, demonstrations: Sequence[Example], *, omitted: int) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}]
    first_turn = omitted + 1
    for index, (past_action, observation) in enumerate(turns):
        content = render_action(past_action, first_turn + index)
        if index == 0 and omitted:
            content = OMITTED.format(count=omitted) + "\n\n" + content
        messages.append({"role": "user", "content": content})
        messages.append({"role": "assistant", "content": render_observation(observation)})
    final = build_final_turn(action, first_turn + len(turns), demonstrations)
    if omitted and not turns:
        final = OMITTED.format(count=omitted) + "\n\n" + final
    messages.append({"role": "user", "content": final})
    return messages


def _size(messages: Sequence[dict[str, str]], count_tokens: Callable[[str], int]) -> int:
    # A few tokens per message for the chat template's role markers.
    return sum(count_tokens(m["content"]) + 8 for m in messages)


def select_demonstrations(records: Sequence[dict[str, Any]], tool: str, arguments: dict[str, Any], k: int) -> list[Example]:
    """The k recorded real observations of `tool` whose arguments are closest to
    `arguments`, best LAST (small models copy the nearest example)."""
    if k <= 0:
        return []
    scored = []
    seen: set[str] = set()
    for row in records:
        if row.get("tool") != tool or row.get("observation", {}).get("is_error"):
            continue
        text = _observation_text(row["observation"])
        if not text or text in seen:
            continue
        seen.add(text)
        scored.append((_similarity(arguments, row.get("arguments") or {}), -len(scored), row, text))
    scored.sort(key=lambda item: (item[0], item[1]))
    chosen = scored[-k:]
    return [({"name": tool, "arguments": row.get("arguments") or {}}, text) for _, _, row, text in chosen]


def _observation_text(observation: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in observation.get("content") or [] if b.get("type") == "text").strip()


def _similarity(a: dict[str, Any], b: dict[str, Any]) -> float:
    keys = a.keys() | b.keys()
    if not keys:
        return 1.0
    shared = sum(1.0 if a.get(key) == b.get(key) else 0.5 for key in a.keys() & b.keys())
    return shared / len(keys)
