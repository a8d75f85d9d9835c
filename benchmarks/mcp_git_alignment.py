"""MCP simulation fidelity from sequence-aligned replay (issue 37, item 3), on the
real `mcp-server-git`.

Two repositories made for the run with `git init` and a few commits: A and B sit
at other paths and hold other files, messages and histories; each has one changed
and one new file in its working tree. One workload of git calls (status, log,
branches, diffs, add, commit, a new branch and its checkout, show, a checkout that
fails), run three ways:

  1. real, on A: the warm-up, one episode with `route: real` on a simroute Runtime
     built in this process (`mode: sim`, a fresh store), each call through the
     episode's MCP front door to mcp-server-git, recorded as any session is;
  2. simulated, on B: a fresh episode with `route: sim` on the same Runtime. The sim
     route's simulator is wrapped so that `AlignedReplay` (backends/alignment)
     answers first, as the integration will do; a call it cannot answer goes to the
     runtime's own simulator, whose world model is unreachable here (the answer is a
     clear simulation error) unless `--model` loads the bundled one. B's repository
     is never touched in this phase;
  3. truth, on B: the same calls sent straight to mcp-server-git on B.

Per call, fidelity is 0 when exactly one side is an error, else the textual
similarity (difflib's ratio) of the two texts with hashes, uuids, dates and
durations masked. Any fidelity here comes from replaying A's answers with B's values
(paths, file names, messages, branch names) written in, not from git semantics:
B's own history and contents show only where the warm-up's values were renamed.
The same is measured with two calls swapped in B's session (and in its truth), where
the sequence no longer aligns past the swap (no target).

Target: mean fidelity >= 0.6. Also reported: the share of calls aligned replay
answered, the time `AlignedReplay.answer` took per answer (issue 37's target for
answers that cost no model call: p50 <= 2 ms, p99 <= 20 ms), and per miss (what it
adds before the model is asked); the in-order session is simulated `--rounds` times
more for the timings (its answers must be the same each time).

`--smoke`: the first four calls, the swap among them; judges no target, writes no file.

Usage: python benchmarks/mcp_git_alignment.py [--model] [--rounds 10] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _results import add_smoke_flag, row, write_results
from kit.launch import write_config

from backends.alignment import AlignedReplay

GIT_SERVER = {"command": sys.executable, "args": ["-m", "mcp_server_git"]}
SWAP = (5, 6)  # git_diff_staged and git_status change places in the swapped run
SMOKE_CALLS, SMOKE_SWAP = 4, (1, 2)
NO_MODEL = {
    "engine": "openai",
    "url": "http://127.0.0.1:9/v1",
    "deadline_s": 5,
}  # nothing listens: misses answer an error
WITH_MODEL = {"max_tokens": 128, "deadline_s": 60}
BASELINE = "the world model alone: 0.07 and 0.18 in two runs (issue 37)"


@dataclass(frozen=True)
class Repository:
    """A repository made for the run: its commits, then a changed and a new file."""

    path: Path
    commits: list[tuple[str, dict[str, str]]]  # message, files written
    changed: tuple[str, str]  # a committed file and its new text
    new: tuple[str, str]  # an untracked file and its text
    message: str  # the workload's commit message
    branch: str  # the workload's new branch

    def make(self) -> Path:
        self.path.mkdir(parents=True)
        for argv in (
            ["init", "-q", "-b", "main"],
            ["config", "user.name", "Bench Mark"],
            ["config", "user.email", "bench@example.com"],
        ):
            _git(self.path, *argv)
        for message, files in self.commits:
            for name, text in files.items():
                (self.path / name).parent.mkdir(parents=True, exist_ok=True)
                (self.path / name).write_text(text)
            _git(self.path, "add", ".")
            _git(self.path, "commit", "-q", "-m", message)
        for name, text in (self.changed, self.new):
            (self.path / name).write_text(text)
        return self.path


def _git(path: Path, *argv: str) -> None:
    subprocess.run(["git", *argv], cwd=path, check=True, capture_output=True)


def repository_a(base: Path) -> Repository:
    return Repository(
        base / "first" / "alpha-project",
        [
            ("Initial commit", {"README.md": "# Alpha\n\nA small alpha project.\n"}),
            ("Add the alpha module", {"src/alpha.py": "def alpha():\n    return 1\n"}),
        ],
        ("README.md", "# Alpha\n\nA small alpha project.\nSee src/alpha.py.\n"),
        ("alpha_notes.txt", "notes for alpha\n"),
        "Document alpha and add notes",
        "alpha-docs",
    )


def repository_b(base: Path, name: str = "beta-work") -> Repository:
    return Repository(
        base / "second" / "place" / name,
        [
            ("Start the beta notes", {"NOTES.md": "# Beta notes\n\nThings to remember.\n"}),
            ("Add beta utilities", {"lib/beta_util.py": "def util(x):\n    return x * 2\n\n\nVALUE = 3\n"}),
            ("Tune VALUE", {"lib/beta_util.py": "def util(x):\n    return x * 2\n\n\nVALUE = 4\n"}),
        ],
        ("NOTES.md", "# Beta notes\n\nThings to remember.\n- water the plants\n"),
        ("beta_todo.txt", "todo: write tests\ntodo: release\n"),
        "Update the notes and add a todo list",
        "beta-todo",
    )


def workload(repo: Repository) -> list[tuple[str, dict[str, Any]]]:
    """One session's calls on `repo`, in order."""
    path = {"repo_path": str(repo.path)}
    return [
        ("git_status", path),
        ("git_log", {**path, "max_count": 5}),
        ("git_branch", {**path, "branch_type": "local"}),
        ("git_diff_unstaged", path),
        ("git_add", {**path, "files": [repo.changed[0], repo.new[0]]}),
        ("git_diff_staged", path),
        ("git_status", path),
        ("git_commit", {**path, "message": repo.message}),
        ("git_create_branch", {**path, "branch_name": repo.branch}),
        ("git_checkout", {**path, "branch_name": repo.branch}),
        ("git_branch", {**path, "branch_type": "local"}),
        ("git_show", {**path, "revision": "HEAD"}),
        ("git_log", {**path, "max_count": 2}),
        ("git_show", {**path, "revision": f"HEAD:{repo.new[0]}"}),
        ("git_checkout", {**path, "branch_name": "no-such-branch"}),
        ("git_status", path),
    ]


def swapped(calls: list, pair: tuple[int, int]) -> list:
    out = list(calls)
    out[pair[0]], out[pair[1]] = out[pair[1]], out[pair[0]]
    return out


# --- fidelity -----------------------------------------------------------------------------

_MASKS = [
    (re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"), "<uuid>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s?(?:Z|[+-]\d{2}:?\d{2}))?"), "<date>"),
    (
        re.compile(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),? [A-Z][a-z]{2} \d{1,2} \d{2}:\d{2}:\d{2} \d{4}(?: [+-]\d{4})?"),
        "<date>",
    ),
    (re.compile(r"\d{4}-\d{2}-\d{2}"), "<date>"),
    (re.compile(r"\b[0-9a-f]{7,64}\b"), "<hash>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|s|sec|seconds?|minutes?|hours?)(?: ago)?\b"), "<duration>"),
]


def masked(text: str) -> str:
    for pattern, mark in _MASKS:
        text = pattern.sub(mark, text)
    return text


def fidelity(truth: tuple[str, bool], served: tuple[str, bool]) -> float:
    """0 when exactly one side is an error, else the masked texts' similarity."""
    if truth[1] != served[1]:
        return 0.0
    return difflib.SequenceMatcher(None, masked(truth[0]), masked(served[0]), autojunk=False).ratio()


# --- the three runs -----------------------------------------------------------------------


def _text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def truth(calls: list) -> list[tuple[str, bool]]:
    """The calls sent straight to mcp-server-git."""
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    transport = StdioTransport(command=GIT_SERVER["command"], args=GIT_SERVER["args"], keep_alive=False)
    async with Client(transport) as client:
        answers = [await client.call_tool(tool, arguments, raise_on_error=False) for tool, arguments in calls]
    return [(_text(answer), bool(answer.is_error)) for answer in answers]


class AlignedFirst:
    """The sim route's simulator with aligned replay asked first (the integration's
    place for it), timing each answer."""

    def __init__(self, aligned: AlignedReplay, inner: Any) -> None:
        self.aligned, self.inner = aligned, inner
        self.timings_ms: list[float] = []
        self.answered: list[str | None] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def simulate(self, call, session, *, deadline_s, background=False, steer=None):
        started = time.perf_counter()
        found = await self.aligned.answer(call, session)
        self.timings_ms.append((time.perf_counter() - started) * 1000)
        self.answered.append(found.basis if found is not None else None)
        if found is not None:
            return found.observation
        return await self.inner.simulate(call, session, deadline_s=deadline_s, background=background, steer=steer)


async def through_simroute(
    config: Path, warm_up: list, runs: list[list], *, rounds: int
) -> tuple[list[tuple[list[tuple[str, bool]], AlignedFirst]], list[AlignedFirst]]:
    """The warm-up in a `route: real` episode, then each run of calls in a fresh
    `route: sim` episode, on one Runtime in this process (its records in one store);
    then the first run `rounds` times more, for its timings (the same answers)."""
    from router.config.root import load_config
    from router.episodes.host import EpisodeHost
    from router.mcp.server import build_server
    from router.runtime.runtime import Runtime

    runtime = Runtime(load_config(config))
    server = build_server(runtime.mcp_parts)
    await runtime.start()
    inner = runtime.engine.simulator
    out = []
    try:
        host = EpisodeHost(runtime.episode_parts, server)
        await episode(host, "real", warm_up)
        for calls in runs:
            first = runtime.engine.simulator = AlignedFirst(AlignedReplay(runtime.store, runtime.replay), inner)
            out.append((await episode(host, "sim", calls), first))
        again = []
        for _ in range(rounds):
            first = runtime.engine.simulator = AlignedFirst(AlignedReplay(runtime.store, runtime.replay), inner)
            assert await episode(host, "sim", runs[0]) == out[0][0], (
                "a repeated simulated session was answered otherwise"
            )
            again.append(first)
    finally:
        await runtime.aclose()
    return out, again


async def episode(host: Any, route: str, calls: list) -> list[tuple[str, bool]]:
    """The calls in a new episode on `route`, through its MCP front door: (text, is_error) of each answer."""
    opened = await host.reset(options={"route": route})
    answers = []
    try:
        for tool, arguments in calls:
            step = await host.step(opened, {"type": "call_tool", "tool_name": tool, "arguments": arguments})
            result = step["observation"]["result"]
            assert step["info"]["provenance"] == route or result.get("isError"), step
            answers.append(
                ("\n".join(block.get("text", "") for block in result["content"]), bool(result.get("isError")))
            )
    finally:
        await host.close(opened)
    return answers


# --- report -------------------------------------------------------------------------------


def report(
    name: str, calls: list, real: list[tuple[str, bool]], served: list[tuple[str, bool]], first: AlignedFirst
) -> float:
    scores = [fidelity(t, s) for t, s in zip(real, served, strict=True)]
    print(f"\n{name}: mean fidelity {statistics.fmean(scores):.3f}")
    for (tool, _), score, basis, (text, error) in zip(calls, scores, first.answered, served, strict=True):
        shown = text.replace("\n", " | ")[:70]
        print(f"  {tool:<18} {score:5.2f}  {basis or 'model':<9} {'error ' if error else ''}{shown}")
    return statistics.fmean(scores)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", action="store_true", help="calls aligned replay cannot answer go to the bundled world model"
    )
    parser.add_argument(
        "--rounds", type=int, default=10, help="the simulated session again this many times, for the timings"
    )
    add_smoke_flag(parser)
    options = parser.parse_args()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mcp-git-alignment-") as folder:
        base = Path(folder)
        a, b, b_swapped = repository_a(base), repository_b(base), repository_b(base, "beta-swapped")
        for repo in (a, b, b_swapped):
            repo.make()
        calls_a, calls_b, pair = workload(a), workload(b), SWAP
        if options.smoke:
            calls_a, calls_b, pair = calls_a[:SMOKE_CALLS], calls_b[:SMOKE_CALLS], SMOKE_SWAP
        calls_swapped = swapped(workload(b_swapped)[: len(calls_b)], pair)
        world_model = WITH_MODEL if options.model else NO_MODEL
        config = write_config(base, mode="sim", mcpServers={"git": GIT_SERVER}, world_model=world_model)
        runs, again = await through_simroute(
            config, calls_a, [calls_b, calls_swapped], rounds=0 if options.smoke else options.rounds
        )
        [(served, first), (served_swapped, first_swapped)] = runs
        # The truth last: the simulated runs never touch B, the real calls change it.
        real, real_swapped = await truth(calls_b), await truth(calls_swapped)
    mean = report("in order", calls_b, real, served, first)
    mean_swapped = report(
        f"calls {pair[0]} and {pair[1]} swapped", calls_swapped, real_swapped, served_swapped, first_swapped
    )
    timed = [first, first_swapped, *again]
    pairs = [pair for each in timed for pair in zip(each.timings_ms, each.answered, strict=True)]
    timings = [ms for ms, basis in pairs if basis is not None]  # answers that cost no model call
    misses = [ms for ms, basis in pairs if basis is None]  # what a miss adds before the model is asked
    answered = sum(basis is not None for basis in first.answered) / len(calls_b)
    answered_swapped = sum(basis is not None for basis in first_swapped.answered) / len(calls_swapped)
    p50, p99 = statistics.median(timings), percentile(timings, 0.99)
    print(f"\naligned replay answered {answered:.0%} of the calls in order, {answered_swapped:.0%} swapped")
    print(f"AlignedReplay.answer: p50 {p50:.2f} ms, p99 {p99:.2f} ms over {len(timings)} answers", end="")
    print(f"; a miss: p50 {statistics.median(misses):.2f} ms over {len(misses)}" if misses else "", end="")
    print(f"; run took {time.perf_counter() - started:.1f} s")
    if options.smoke:
        return
    print(f"target mean fidelity >= 0.6: {'met' if mean >= 0.6 else 'NOT met'}")
    fallback = "the bundled world model" if options.model else "a simulation error (no world model reachable)"
    write_results(
        __file__,
        "MCP fidelity on mcp-server-git from sequence-aligned "
        f"replay ({len(calls_b)} calls; misses answered by {fallback})",
        [
            row(
                "mean fidelity, same calls on repository B",
                mean,
                "ratio",
                baseline=BASELINE,
                target=">= 0.6",
                better="higher",
            ),
            row(f"mean fidelity, calls {pair[0]} and {pair[1]} swapped", mean_swapped, "ratio", better="higher"),
            row("calls answered by aligned replay", answered, "share", better="higher"),
            row("calls answered by aligned replay, swapped", answered_swapped, "share", better="higher"),
            row("AlignedReplay.answer p50", p50, "ms", target="<= 2", better="lower"),
            row("AlignedReplay.answer p99", p99, "ms", target="<= 20", better="lower"),
            *(
                [
                    row(
                        "AlignedReplay.answer p50 on a miss (before the model is asked)",
                        statistics.median(misses),
                        "ms",
                        better="lower",
                    )
                ]
                if misses
                else []
            ),
        ],
    )


if __name__ == "__main__":
    os.environ.setdefault("GIT_TERMINAL_PROMPT", "0")
    asyncio.run(main())
