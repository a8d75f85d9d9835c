"""Messages for the MCP domain, in the layout the world models were trained on.

system   = task + action space (the server's tools) + initial state + simulation instruction
then     = (user action, assistant observation) per earlier step with this server
then     = demonstrations: real observations of the same tool from other sessions,
           as marked example turns, best last (see prompt.py for why)
last     = the current action and the tagged-answer instruction.

Demonstrations come after the history, so the system + history prefix stays
byte-identical from one step to the next and a model runner's prefix cache holds.
For the same reason, when the tool list must shrink to fit, it shrinks the same
way whatever tool is called: the called tool's full definition then goes into
the last turn, not the system message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from backends.world_model.prompt import CLOSING as PROMPT_CLOSING
from backends.world_model.prompt import (
    EXAMPLE_NOTE,
    RenderExample,
    assemble,
    best_last,
    cut_to_fit,
    omit_oldest,
    render_observation,
    size,
)

Action = dict[str, Any]  # {"name": ..., "arguments": {...}}
Example = tuple[Action, str]  # (action, observation text)

TASK = (
    'You are the MCP server "{server}". An AI agent is calling your tools. For each action, '
    "predict exactly what this server returns: the same format, fields and style as the real server, "
    "with values consistent with everything returned earlier in this session. Invalid arguments get "
    "the error the real server would give."
)
CLOSING = PROMPT_CLOSING.format(what="server")


def render_action(action: Action, turn: int) -> str:
    body = json.dumps({"name": action["name"], "arguments": action.get("arguments", {})}, indent=2, ensure_ascii=False)
    return f"### Turn {turn}\n**Action:**\n```json\n{body}\n```"


def signature(tool: dict[str, Any]) -> str:
    """One line for a tool: `- name(param: type, optional?: type): description`."""
    schema = tool.get("inputSchema") or {}
    required = set(schema.get("required") or [])
    params = []
    for name, spec in (schema.get("properties") or {}).items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        kind = "|".join(kind) if isinstance(kind, list) else (kind or "any")
        params.append(f"{name}{'' if name in required else '?'}: {kind}")
    description = " ".join(str(tool.get("description") or "").split())
    return f"- {tool.get('name')}({', '.join(params)})" + (f": {description}" if description else "")


def build_system(
    server: str,
    tools: Sequence[dict[str, Any]],
    *,
    initial_state: str | None = None,
    simulation_instruction: str | None = None,
    tool_list: str = "json",
) -> str:
    """`tool_list`: `json`, the full definitions (the trained layout); `signatures`,
    one line per tool. With the bundled 135M model, the same recorded error was
    copied exactly under signatures and garbled under the full JSON schemas."""
    if tool_list == "signatures":
        listing = "## Tools\n" + "\n".join(signature(tool) for tool in tools)
    else:
        listing = "## Tools\n```json\n" + json.dumps(list(tools), indent=2, ensure_ascii=False) + "\n```"
    parts = [TASK.format(server=server), listing]
    if initial_state:
        parts.append("## Initial state\n" + initial_state.strip())
    if simulation_instruction:
        parts.append("## Simulation instruction\n" + simulation_instruction.strip())
    return "\n\n".join(parts)


def build_final_turn(action: Action, turn: int, *, definition: dict[str, Any] | None = None) -> str:
    """The called tool's `definition` when the system message no longer carries it
    in full; the action; the closing instruction."""
    parts = []
    if definition is not None:
        parts.append(
            f"Definition of the tool `{action['name']}`:\n```json\n"
            + json.dumps(definition, indent=2, ensure_ascii=False)
            + "\n```"
        )
    parts.append(render_action(action, turn))
    parts.append(CLOSING)
    return "\n\n".join(parts)


def example_turn(example: Example) -> RenderExample:
    """A demonstration as a marked (action, observation) turn."""
    example_action, observation = example
    return lambda number: (
        EXAMPLE_NOTE.format(what="result of this server") + render_action(example_action, number),
        render_observation(observation),
    )


def trim_tools(tools: Sequence[dict[str, Any]], level: int) -> list[dict[str, Any]]:
    """Tool definitions at a trim level: 0 all in full; 1 without schemas; 2 by name
    only; 3 none. Independent of the called tool, so the system message is too."""
    if level == 0:
        return list(tools)
    if level == 1:
        return [{k: v for k, v in tool.items() if k in ("name", "description")} for tool in tools]
    if level == 2:
        return [{"name": tool.get("name")} for tool in tools]
    return []


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
    tool_list: str = "json",
) -> list[dict[str, str]]:
    """The chat messages for one simulated MCP call, fitted to `budget_tokens`:
    first the tool list shrinks (the called tool's definition moving to the last
    turn), then the oldest turns go (with a marker)."""
    turns = list(history)
    called = next((tool for tool in tools if tool.get("name") == action["name"]), None)
    definition: dict[str, Any] | None = None

    def render_turn(index: int, number: int) -> tuple[str, str]:
        past_action, observation = turns[index]
        return render_action(past_action, number), render_observation(observation)

    def render_final(number: int) -> str:
        return build_final_turn(action, number, definition=definition)

    def build(examples: Sequence[Example], omitted: int) -> list[dict[str, str]]:
        return assemble(
            system, len(turns), render_turn, render_final, omitted=omitted, examples=[example_turn(e) for e in examples]
        )

    for level in range(4):
        definition = called if level > 0 else None
        system = build_system(
            server,
            trim_tools(tools, level),
            initial_state=initial_state,
            simulation_instruction=simulation_instruction,
            tool_list=tool_list,
        )
        messages = build(demonstrations, 0)
        if budget_tokens is None or size(messages, count_tokens) <= budget_tokens:
            return messages
    assert budget_tokens is not None  # without a budget the first level's messages were returned
    examples = list(demonstrations)
    messages, omitted = omit_oldest(
        system,
        len(turns),
        render_turn,
        render_final,
        budget_tokens=budget_tokens,
        count_tokens=count_tokens,
        examples=[example_turn(e) for e in examples],
    )
    if size(messages, count_tokens) <= budget_tokens:
        return messages
    # Even with no history it does not fit: fewer demonstrations (the best, last,
    # stays), then the best one cut short.
    while len(examples) > 1 and size(messages, count_tokens) > budget_tokens:
        examples.pop(0)
        messages = build(examples, omitted)
    if examples and size(messages, count_tokens) > budget_tokens:
        example_action, text = examples[-1]
        examples[-1] = (example_action, cut_to_fit(text, size(messages, count_tokens) - budget_tokens, count_tokens))
        messages = build(examples, omitted)
    return messages  # the model runner reports the overflow if even this does not fit


def select_demonstrations(
    records: Sequence[dict[str, Any]], tool: str, arguments: dict[str, Any], k: int
) -> list[Example]:
    """The k recorded real observations of `tool` whose arguments are closest to
    `arguments`, best LAST (small models copy the nearest example)."""
    scored = []
    seen: set[str] = set()
    for row in records:
        if row.get("tool") != tool or row.get("observation", {}).get("is_error"):
            continue
        text = _observation_text(row["observation"])
        if not text or text in seen:
            continue
        seen.add(text)
        past = row.get("arguments") or {}
        scored.append((_similarity(arguments, past), ({"name": tool, "arguments": past}, text)))
    return best_last(scored, k)


def _observation_text(observation: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in observation.get("content") or [] if b.get("type") == "text").strip()


def _similarity(a: dict[str, Any], b: dict[str, Any]) -> float:
    keys = a.keys() | b.keys()
    if not keys:
        return 1.0
    shared = sum(1.0 if a.get(key) == b.get(key) else 0.5 for key in a.keys() & b.keys())
    return shared / len(keys)
