"""Does the world model read the session's history? The demo's shell episode,
looped: a real `echo '<text>' > notes.txt && ls -l` (run by bash in a scratch
directory), then `cat notes.txt` simulated with the session's history and no
recorded example of it. The text is in the earlier *command*, not in an earlier
observation, so only a model that reads the history answers with it; no pattern
for this command is written anywhere in simroute.

Each loop is a new session with its own text and seed. Counted: answers that show
the text; answers the domain checker refused twice (a clear simulation error, not
degenerate output passed on); other answers (well-formed, wrong).

Target (issue 25): the text in at least 8 of 10 loops.

Usage: python benchmarks/sim_history_recall.py [--loops 10] [--model PATH] [--chat-format NAME] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import tempfile
import time
from pathlib import Path

from _results import add_smoke_flag, row, write_results

from backends.shell.screen import ShellResult
from backends.world_model.llama_engine import LlamaCppEngine
from backends.world_model.simulator import WorldModelSimulator
from backends.world_model.terminal_domain import TerminalDomain
from router.config.world_model import DEFAULT_MODEL_PATH
from router.types import Call, Observation, Provenance, Session, Turn

TEXTS = [
    "hello from the sandbox",
    "buy milk and eggs",
    "meeting at noon",
    "deploy v2 tonight",
    "call alice back",
    "the quick brown fox",
    "remember the keys",
    "lunch with bob",
    "rotate the logs",
    "ship it friday",
]


def real_turn(text: str, session_id: str) -> Turn:
    """The echo as the real sandbox answers it (bash in a scratch directory)."""
    command = f"echo '{text}' > notes.txt && ls -l"
    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run(["bash", "-c", command], cwd=folder, capture_output=True, text=True, timeout=10)
    result = ShellResult(done.stdout + done.stderr, done.returncode, "/workspace")
    call = Call("shell", "shell", "shell_exec", {"command": command}, session_id)
    return Turn(call, Observation([{"type": "text", "text": result.text()}], Provenance.REAL, structured=result.structured()))


async def run(loops: int, model: str, chat_format: str | None) -> dict[str, int]:
    engine = LlamaCppEngine(model, n_ctx=4096, cached_sessions=2, prefill="**Environment Observation:**\n", chat_format=chat_format)
    simulator = WorldModelSimulator(engine, domains={"shell": TerminalDomain()}, max_tokens=256)
    counts = {"recalled": 0, "refused": 0, "wrong": 0}
    try:
        for i in range(loops):
            text = TEXTS[i % len(TEXTS)]
            session = Session(f"recall-{i}", seed=i)
            session.add_turn(real_turn(text, session.id))
            started = time.perf_counter()
            answer = await simulator.simulate(
                Call("shell", "shell", "shell_exec", {"command": "cat notes.txt"}, session.id), session, deadline_s=600
            )
            kind = "recalled" if text in answer.text else "refused" if answer.text.startswith("simroute: world model failed") else "wrong"
            counts[kind] += 1
            print(f"loop {i + 1:2}: {kind:8} {time.perf_counter() - started:5.1f} s  {answer.text[:90]!r}")
    finally:
        await engine.aclose()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loops", type=int, default=10)
    parser.add_argument("--model", default=DEFAULT_MODEL_PATH)
    parser.add_argument("--chat-format", default=None, help="for a GGUF without a chat template (e.g. gemma)")
    add_smoke_flag(parser)
    args = parser.parse_args()
    loops = 1 if args.smoke else args.loops
    model = str(Path(args.model).expanduser())
    counts = asyncio.run(run(loops, model, args.chat_format))
    print(
        f"\nthe simulated cat shows the echoed text in {counts['recalled']} of {loops} loops "
        f"({counts['refused']} refused as degenerate, {counts['wrong']} well-formed but without it); model {Path(model).name}"
    )
    if args.smoke:
        return
    write_results(
        __file__,
        "A simulated `cat` of a file the session's earlier command wrote",
        [
            row("loops whose simulated cat shows the echoed text", counts["recalled"], f"of {loops}", target=">= 8", better="higher"),
            row("loops answered a clear simulation error (degenerate output refused)", counts["refused"], f"of {loops}"),
            row("loops answered well-formed output without the text", counts["wrong"], f"of {loops}"),
        ],
    )


if __name__ == "__main__":
    main()
