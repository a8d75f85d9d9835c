"""The tuning loop on the bundled model: records → `simroute tune` → evaluation.

Workload: `--sessions` agent sessions (30 by default: 660 real calls) of the project's
own workload servers through `simroute mcp` in `mode: real`, recorded into one store:
benchmarks/routing_quality.py's session (mcp-server-time, the ticket counter, the
git-style repository server over a new repository per session, the page reader), then
eight calls of mcp-server-git on a new git repository per session (status, log, diff,
add, commit, show: the calls that change the repository and those that read it). Then `simroute tune`
with the bundled SmolLM2-135M as the configured model, in its own process: the training
data (a fifth of the sessions held out), one epoch of a LoRA adapter (the defaults: rank
16 on the attention projections, ≤ 512 tokens an example), the conversion to GGUF and
the evaluation against the base model on the held-out sessions.

Printed: tokens/s and the wall time of the epoch, the whole run's wall time, the tune
process's peak RSS, the load average before and after, and held-out fidelity and the
well-formed rate, base vs candidate, with the world-state layer off (the model card's
figures), and fidelity end to end (the layer on: the state, aligned training sessions,
then the model) with the share of calls the layer answered without the model. Targets
(issue 39): fidelity +0.2 absolute over the base, the well-formed rate not lower,
≤ 60 minutes on a quiet 2-core machine.

Needs the training stack (`pip install -e '.[tune]'`) and the conversion tools
(`simroute tune --prepare`), in the interpreter that runs this script. A long run: it
loads two cores for most of an hour; run it alone.

`--smoke`: needs no extra. Two sessions of the smoke workload recorded, `simroute tune
--data-only` (the data step and the card), and, where the training stack is missing,
that `simroute tune` says how to install it and exits 2; trains nothing, writes no file.

Usage: python benchmarks/tune_loop.py [--sessions 30] [--epochs 1] [--keep DIR] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _results import add_smoke_flag, row, write_results
from kit.launch import model_path, simroute_executable, write_config
from kit.workload import World, run_session, served_page
from mcp_git_alignment import GIT_SERVER, Repository
from routing_quality import STORE, repository_files, workload

from router.tune.extra import missing_packages

SMOKE_SERVERS = ("tickets", "pages")


def git_repository(folder: Path, n: int) -> Repository:
    """Session n's git repository: its names and texts differ with n, so no two sessions'
    git answers are the same."""
    name = f"project-{n}"
    return Repository(
        folder / "git" / name,
        [
            ("Initial commit", {"README.md": f"# {name}\n\nRepository number {n}.\n"}),
            (f"Add module {n}", {f"src/module_{n}.py": f"VALUE = {n}\n"}),
        ],
        ("README.md", f"# {name}\n\nRepository number {n}, documented.\n"),
        (f"notes_{n}.txt", f"notes for session {n}\n"),
        f"Document {name}",
        f"work-{n}",
    )


def git_calls(repository: Repository) -> list[tuple[str, dict]]:
    """mcp-server-git's calls of one session (front names `git_<tool>`)."""
    path = {"repo_path": str(repository.make())}
    return [
        ("git_git_status", path),
        ("git_git_log", {**path, "max_count": 5}),
        ("git_git_diff_unstaged", path),
        ("git_git_add", {**path, "files": [repository.changed[0], repository.new[0]]}),
        ("git_git_diff_staged", path),
        ("git_git_commit", {**path, "message": repository.message}),
        ("git_git_log", {**path, "max_count": 2}),
        ("git_git_show", {**path, "revision": "HEAD"}),
    ]


async def record(folder: Path, sessions: int, *, smoke: bool) -> Path:
    """`sessions` real sessions recorded into folder's store; returns the config."""
    with served_page(folder) as url:
        world = World(folder / "world", url)
        servers = world.servers(*SMOKE_SERVERS) if smoke else {**world.servers(), "git": GIT_SERVER}
        config = write_config(
            folder, mode="real", store=STORE, mcpServers=servers, world_model={"model_path": str(model_path())}
        )
        for n in range(sessions):
            repository = world.repository(f"session-{n}", repository_files(n))
            calls = workload(world, repository, smoke=smoke)
            await run_session(config, calls if smoke else calls + git_calls(git_repository(folder, n)))
            print(f"  recorded session {n + 1}/{sessions}", file=sys.stderr)
    return config


def tune(out: Path, config: Path, *args: str) -> tuple[subprocess.CompletedProcess, float, float]:
    """`simroute tune` in its own process: the result, its wall time and the peak RSS (MB)
    of the children so far (the tune process is the largest this script starts)."""
    started = time.perf_counter()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [simroute_executable(), "tune", str(out), "--config", str(config), *args],
        capture_output=True,
        text=True,
        env=env,
    )
    seconds = time.perf_counter() - started
    return done, seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def smoke(folder: Path) -> None:
    config = asyncio.run(record(folder, 2, smoke=True))
    # Nothing held out: two sessions could both fall on the test side, leaving nothing to train on.
    done, seconds, _ = tune(folder / "data", config, "--data-only", "--test-fraction", "0")
    if done.returncode != 0:
        raise SystemExit(f"simroute tune --data-only failed: {done.stderr}")
    card = json.loads((folder / "data" / "card.json").read_text())
    print(f"data step: {card['data']['examples']} examples in {seconds:.1f} s")
    if missing := missing_packages():
        refused, _, _ = tune(folder / "train", config)
        if refused.returncode != 2 or "pip install 'simroute[tune]'" not in refused.stderr:
            raise SystemExit(f"without {missing}, tune should explain the extra and exit 2: {refused.stderr}")
        print(f"without the training stack ({', '.join(missing)}): tune explains the extra and exits 2")
    else:
        print("the training stack is installed; the smoke run trains nothing")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=30)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (the store, the run)")
    add_smoke_flag(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tune-loop-") as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        if args.smoke:
            smoke(folder)
            return
        if missing := missing_packages():
            raise SystemExit(f"the training stack is missing ({', '.join(missing)}): pip install -e '.[tune]'")
        load_before = os.getloadavg()
        config = asyncio.run(record(folder, args.sessions, smoke=False))
        out = folder / "run"
        done, seconds, peak_mb = tune(out, config, "--epochs", str(args.epochs), "--test-fraction", "0.2")
        load_after = os.getloadavg()
        if done.returncode != 0:
            raise SystemExit(f"simroute tune failed: {done.stderr}")
        report(json.loads((out / "card.json").read_text()), seconds, peak_mb, load_before, load_after)


def report(card: dict, seconds: float, peak_mb: float, load_before: tuple, load_after: tuple) -> None:
    training, evaluation = card["training"], card["evaluation"]["state_layer_off"]
    epoch = training["epochs"][-1]
    fidelity, formed = evaluation["fidelity"], evaluation["well_formed_rate"]
    print(f"examples: {training['examples']}")
    print(f"epoch {epoch['epoch']}: {epoch['seconds']:.0f} s, {epoch['tokens_per_s']} tokens/s on {training['device']}")
    print(f"whole run (data, training, conversion, evaluation): {seconds:.0f} s; peak RSS {peak_mb:.0f} MB")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    print(f"held-out fidelity (state layer off): base {fidelity['base']}, candidate {fidelity['candidate']}")
    print(f"well-formed rate: base {formed['base']}, candidate {formed['candidate']}")
    whole = card["evaluation"]["end_to_end"]
    without = whole.get("answered_without_model", {})
    print(
        f"held-out fidelity end to end (world-state layer on): base {whole['fidelity']['base']}, "
        f"candidate {whole['fidelity']['candidate']}; answered without the model: {without.get('candidate')}"
    )
    gain = (fidelity["candidate"] or 0.0) - (fidelity["base"] or 0.0)
    write_results(
        __file__,
        "The tuning loop on the bundled model: records → simroute tune → held-out evaluation",
        [
            row("training tokens per second", epoch["tokens_per_s"], "tokens/s", better="higher"),
            row("one epoch's wall time", epoch["seconds"], "s", better="lower"),
            row("the whole run's wall time", seconds, "s", target="<= 3600", better="lower"),
            row("peak RSS of simroute tune", peak_mb, "MB", better="lower"),
            row("held-out fidelity, base", fidelity["base"] or 0.0, "fraction"),
            row("held-out fidelity, candidate", fidelity["candidate"] or 0.0, "fraction", better="higher"),
            row("fidelity gain over the base", gain, "fraction", target=">= 0.2", better="higher"),
            row(
                "well-formed rate, candidate", formed["candidate"] or 0.0, "fraction", baseline="base", better="higher"
            ),
            row("held-out fidelity end to end, base", whole["fidelity"]["base"] or 0.0, "fraction"),
            row(
                "held-out fidelity end to end, candidate",
                whole["fidelity"]["candidate"] or 0.0,
                "fraction",
                better="higher",
            ),
            row("share answered without the model, end to end", without.get("candidate") or 0.0, "fraction"),
        ],
    )


if __name__ == "__main__":
    main()
