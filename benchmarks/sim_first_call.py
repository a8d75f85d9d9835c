"""A new agent session's first simulated call against its later steps, and the
latency of simulated MCP text tools on a server with a dozen tools.

The bundled SmolLM2-135M in-process, with the router's defaults (4,096-token
contexts, max_tokens 256 capped by the tools' recorded answer sizes, temperature
0.6, the observation marker prefilled). A 12-tool notes server whose tools answer
a few lines; each tool has two recorded answers from another session. Each agent
session makes 6 calls on different tools.

Two model runners, sessions interleaved one by one: `shared` saves the model state after
the system prompt (task + the 12 tool definitions) the first time it is read and
loads it into every new session; `baseline` has that off
(shared_system_states=0), so a new session re-reads the system prompt. The first
session of each model runner pays the one-time read and is reported apart.

Targets (issue 17): a session's first call <= 1.5x a later step; median latency of
a simulated MCP tool on a dozen-tool server <= 2 s when its answers are a few lines.

Usage: python benchmarks/sim_first_call.py [--sessions 6] [--model PATH] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

from _results import add_smoke_flag, row, write_results

from backends.world_model.llama_runner import LlamaCppRunner
from backends.world_model.mcp_domain import McpDomain
from backends.world_model.simulator import WorldModelSimulator
from calls import Call, Observation, Provenance, Session, Turn

DEFAULT_MODEL = "~/.cache/simroute/models/SmolLM2-135M-Instruct.Q4_1.gguf"


def tool(name: str, description: str, **properties: str) -> dict:
    return {
        "name": name,
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {k: {"type": v} for k, v in properties.items()},
            "required": list(properties),
        },
    }


TOOLS = [
    tool("version", "The server's version."),
    tool("list_notes", "List the notes, one per line."),
    tool("create_note", "Create a note; answers its id.", title="string", body="string"),
    tool("get_note", "One note's title and body.", note_id="integer"),
    tool("delete_note", "Delete a note.", note_id="integer"),
    tool("rename_note", "Rename a note.", note_id="integer", title="string"),
    tool("search_notes", "Notes whose title or body contains the text.", text="string"),
    tool("tag_note", "Add a tag to a note.", note_id="integer", tag="string"),
    tool("list_tags", "Every tag with its number of notes."),
    tool("count_notes", "How many notes there are."),
    tool("note_history", "A note's edits, newest first.", note_id="integer"),
    tool("stats", "Store statistics: notes, tags, size."),
]
# Two recorded answers per tool, from another session: (arguments, text).
RECORDED = {
    "version": [({}, "notes-store 2.4.1 (build 7731, sqlite backend)")],
    "list_notes": [({}, "1. groceries\n2. ideas\n3. trip"), ({}, "1. groceries")],
    "create_note": [
        ({"title": "trip", "body": "book train"}, "Created note 3: trip"),
        ({"title": "ideas", "body": "x"}, "Created note 2: ideas"),
    ],
    "get_note": [({"note_id": 1}, "Note 1: groceries\nmilk, eggs"), ({"note_id": 2}, "Note 2: ideas\na faster router")],
    "delete_note": [({"note_id": 1}, "Deleted note 1"), ({"note_id": 3}, "Deleted note 3")],
    "rename_note": [({"note_id": 2, "title": "plans"}, "Renamed note 2: ideas -> plans")],
    "search_notes": [({"text": "milk"}, "1. groceries: milk, eggs"), ({"text": "train"}, "3. trip: book train")],
    "tag_note": [({"note_id": 1, "tag": "home"}, "Tagged note 1 with home (2 tags)")],
    "list_tags": [({}, "home: 2 notes\nwork: 1 note\ntravel: 1 note")],
    "count_notes": [({}, "3 notes")],
    "note_history": [({"note_id": 1}, "2026-11-20 10:02 edited body\n2026-11-19 18:40 created")],
    "stats": [({}, "notes: 3\ntags: 3\nsize: 412 bytes")],
}
SESSION_CALLS = [
    ("list_notes", {}),
    ("get_note", {"note_id": 2}),
    ("search_notes", {"text": "eggs"}),
    ("count_notes", {}),
    ("list_tags", {}),
    ("note_history", {"note_id": 2}),
]


def records_for(call: Call) -> list[dict]:
    return [
        {
            "session": "recorded",
            "tool": call.tool,
            "arguments": arguments,
            "occurrence": 1,
            "call_key": None,
            "observation": {"content": [{"type": "text", "text": text}], "is_error": False},
        }
        for arguments, text in RECORDED.get(call.tool, [])
    ]


def simulator_with(model_runner: LlamaCppRunner) -> WorldModelSimulator:
    domain = McpDomain(
        tools_for=lambda server: TOOLS,
        records_for=records_for,
        output_schema_for=lambda server, name: None,
        tool_list="signatures",
    )
    return WorldModelSimulator(model_runner, domains={"mcp": domain}, max_tokens=256, context_tokens=4096)


async def run_session(simulator: WorldModelSimulator, session_id: str, calls: list[tuple[str, dict]]) -> list[float]:
    session = Session(session_id)
    latencies = []
    for name, arguments in calls:
        call = Call("mcp", "notes", name, arguments, session_id)
        started = time.perf_counter()
        observation = await simulator.simulate(call, session, deadline_s=120)
        latencies.append(time.perf_counter() - started)
        if observation.is_error and observation.text.startswith("simroute:"):
            raise RuntimeError(f"{name}: {observation.text}")
        session.history.append(
            Turn(call, Observation(observation.content, Provenance.SIM, is_error=observation.is_error))
        )
    return latencies


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6, help="sessions per model runner after the first")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    add_smoke_flag(parser)
    options = parser.parse_args()
    calls = SESSION_CALLS[:2] if options.smoke else SESSION_CALLS  # smoke: a first call and one later step
    if options.smoke:
        options.sessions = 1

    prefill = "**Environment Observation:**\n"
    model_runners = {
        "shared": LlamaCppRunner(Path(options.model), n_ctx=4096, prefill=prefill),
        "baseline": LlamaCppRunner(Path(options.model), n_ctx=4096, prefill=prefill, shared_system_states=0),
    }
    simulators = {name: simulator_with(model_runner) for name, model_runner in model_runners.items()}
    for model_runner in model_runners.values():
        await model_runner.start()  # loading is not part of any call
    system_tokens = model_runners["shared"].count_tokens(
        simulators["shared"].messages_for(Call("mcp", "notes", "version", {}, "x"), Session("x"))[0]["content"]
    )

    runs: dict[str, list[list[float]]] = {name: [] for name in model_runners}
    for index in range(options.sessions + 1):  # interleaved: one session of each model runner in turn
        for name, simulator in simulators.items():
            runs[name].append(await run_session(simulator, f"{name}-{index}", calls))
    for model_runner in model_runners.values():
        await model_runner.aclose()

    print(
        f"\nSmolLM2-135M in-process, 12-tool server (system prompt {system_tokens} tokens), "
        f"{options.sessions} sessions x {len(calls)} calls per model runner after a first one; load average "
        f"{os.getloadavg()[0]:.2f}\n"
    )
    print(
        f"{'engine':9} {'1st session 1st call':>21} {'first call (median)':>20} {'later step (median)':>20} "
        f"{'first/later':>12} {'all calls median':>17}"
    )
    figures = {}
    for name, sessions in runs.items():
        first_ever = sessions[0][0]
        firsts = [s[0] for s in sessions[1:]]
        laters = [x for s in sessions[1:] for x in s[1:]]
        every = [x for s in sessions[1:] for x in s]
        figures[name] = (statistics.median(firsts), statistics.median(laters), statistics.median(every))
        first, later, median_all = figures[name]
        print(f"{name:9} {first_ever:20.2f}s {first:19.2f}s {later:19.2f}s {first / later:12.2f} {median_all:16.2f}s")
    shared, baseline = figures["shared"], figures["baseline"]
    print(f"\nfirst call, shared / baseline = {shared[0] / baseline[0]:.2f}")
    print(
        f"shared: first call / later step = {shared[0] / shared[1]:.2f} (target <= 1.5); "
        f"median simulated call {shared[2]:.2f} s (target <= 2 s)"
    )
    if options.smoke:
        return
    rows = []
    for name, (first, later, _median_all) in figures.items():
        rows.append(row(f"{name}: first call of a session (median)", first, "s", better="lower"))
        rows.append(row(f"{name}: later step (median)", later, "s", better="lower"))
    rows += [
        row(
            "first call, shared / baseline",
            shared[0] / baseline[0],
            "ratio",
            baseline="a model runner that re-reads the system prompt (shared_system_states=0)",
            better="lower",
        ),
        row(
            "shared: first call / later step",
            shared[0] / shared[1],
            "ratio",
            baseline="a later step of the same sessions",
            target="<= 1.5",
            better="lower",
        ),
        row("shared: median simulated call, 12-tool server", shared[2], "s", target="<= 2", better="lower"),
    ]
    write_results(
        __file__, "A new session's first simulated call against its later steps (bundled GGUF world model)", rows
    )


if __name__ == "__main__":
    asyncio.run(main())
