"""How often the bundled world model answers a text tool in the real format,
by where the recorded example sits in the prompt (same model, same seeds):

  example turn   the example as a marked (action, observation) turn right before
                 the current action (simroute's layout)
  quoted         the same example quoted inside the last user message

The tool is a git-like server's `git_status`; its recorded real result starts
with "Repository status:", and an answer counts as well-formed when it does too.

Usage: python benchmarks/sim_format.py [--samples 16] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from _results import add_smoke_flag, row, write_results

from backends.world_model.llama_runner import LlamaCppRunner
from backends.world_model.mcp_prompt import build_mcp_messages
from backends.world_model.parse import InvalidPrediction, parse_prediction

MODEL = Path.home() / ".cache/simroute/models/SmolLM2-135M-Instruct.Q4_1.gguf"
TOOLS = [
    {
        "name": "git_status",
        "description": "Shows the working tree status",
        "inputSchema": {"type": "object", "properties": {"repo_path": {"type": "string"}}},
    },
    {
        "name": "git_log",
        "description": "Shows the commit logs",
        "inputSchema": {
            "type": "object",
            "properties": {"repo_path": {"type": "string"}, "max_count": {"type": "integer"}},
        },
    },
]
HISTORY = [
    (
        {"name": "git_log", "arguments": {"repo_path": "/repo", "max_count": 2}},
        "Commit history:\nCommit: 'a1b2c3'\nAuthor: Ann\nDate: 2026-11-20\nMessage: fix parser\n\n"
        "Commit: 'd4e5f6'\nAuthor: Bob\nDate: 2026-11-19\nMessage: add tests\n",
    )
]
EXAMPLE = (
    {"name": "git_status", "arguments": {"repo_path": "/other"}},
    "Repository status:\nOn branch main\nChanges not staged for commit:\n  modified:   README.md\n",
)
ACTION = {"name": "git_status", "arguments": {"repo_path": "/repo"}}
FORMAT = "Repository status:"


def example_turn_layout() -> list[dict[str, str]]:
    return build_mcp_messages(server="git", tools=TOOLS, history=HISTORY, action=ACTION, demonstrations=[EXAMPLE])


def quoted_layout() -> list[dict[str, str]]:
    """The example turn folded into the last message, as a quotation before the action."""
    messages = example_turn_layout()
    final, observation, example = messages.pop(), messages.pop(), messages.pop()
    quoted = (
        "A real result of this server in another "
        f"session:\n\n{example['content']}\n{observation['content']}\n\n{final['content']}"
    )
    return [*messages, {"role": "user", "content": quoted}]


async def well_formed(messages: list[dict[str, str]], samples: int) -> int:
    good = 0
    for seed in range(samples):
        model_runner = LlamaCppRunner(
            str(MODEL), n_ctx=4096, seed=seed, cached_sessions=1, prefill="**Environment Observation:**\n"
        )
        try:
            completion = await model_runner.complete(messages, session_id="bench", deadline_s=120, max_tokens=40)
        finally:
            await model_runner.aclose()
        try:
            good += parse_prediction(completion.text).startswith(FORMAT)
        except InvalidPrediction:
            pass
    return good


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=16)
    add_smoke_flag(parser)
    options = parser.parse_args()
    samples = 1 if options.smoke else options.samples
    rows = []
    print(
        f"SmolLM2-135M, text tool git_status, {samples} samples "
        f"(seeds 0..{samples - 1}), answers in the recorded format:"
    )
    for name, layout in (("example turn", example_turn_layout), ("quoted", quoted_layout)):
        good = await well_formed(layout(), samples)
        print(f"  {name:13} {good:3d} / {samples}")
        rows.append(
            row(
                f"answers in the recorded format, {name}",
                good / samples,
                "fraction",
                better="higher",
                baseline="the quoted layout (same model, same seeds)" if name == "example turn" else None,
            )
        )
    if not options.smoke:
        write_results(
            __file__,
            "How often the bundled world model answers a text tool in the real format, by example layout",
            rows,
        )


if __name__ == "__main__":
    asyncio.run(main())
