"""How often the shell world state alone answers a step exactly as the real sandbox does.

The workload of issue 37 (benchmarks/_shell_workload.py: 10 episodes x 20 command lines,
fixed seed) runs twice: in the project's sandbox image through the shell channel's real
side (the ground truth), and through `backends.world_state.shell.run` from a state seeded
with the episode's files, no model anywhere. A step is equal when output (stdout and
stderr as the agent sees them, `ls -l` dates masked) and exit code are identical. A step
the state cannot answer (None) counts as unequal; the state then forgets what the line
may have changed, as it would with nothing to learn from, and the episode goes on.

Target: >= 95 % of steps equal (the sim route's target with the model loaded; here
without it). Also reported: steps answered, and the executor's time per step.

Usage: python benchmarks/shell_state_equality.py [--smoke] [--show-unequal]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import dataclass

from _results import add_smoke_flag, row, write_results
from _shell_workload import Episode, draw_episodes, run_in_sandbox, same_answer

from backends.world_state.shell import new_world, observe, run, seed_files
from calls import Provenance

CLOCK = 1_800_000_000.0  # the state's clock: dates are masked, any will do


@dataclass
class _Unknown:
    """No answer at all: what observe gets when neither the state nor anything else answered."""

    output: str = ""
    exit_code: int | None = None
    cwd: str | None = None


def replay(episode: Episode) -> tuple[list[tuple[str, int | None] | None], list[float]]:
    world = new_world(clock=CLOCK)
    seed_files(world, episode.files)
    answers: list[tuple[str, int | None] | None] = []
    timings = []
    for command in episode.commands:
        started = time.perf_counter()
        outcome = run(world, command)
        timings.append(time.perf_counter() - started)
        if outcome is None:
            observe(world, command, _Unknown(), provenance=Provenance.SIM)
            answers.append(None)
        else:
            answers.append((outcome.output, outcome.exit_code))
    return answers, timings


async def measure(episodes: list[Episode], *, show_unequal: bool) -> dict[str, float]:
    steps = equal = answered = 0
    timings: list[float] = []
    for episode in episodes:
        truth = await run_in_sandbox(episode)
        mine, spent = replay(episode)
        timings.extend(spent)
        for command, real, simulated in zip(episode.commands, truth, mine, strict=True):
            steps += 1
            answered += simulated is not None
            if simulated is not None and same_answer(real, simulated):
                equal += 1
            elif show_unequal:
                print(f"episode {episode.index}: $ {command}\n  sandbox: {real!r}\n  state:   {simulated!r}")
    return {
        "steps": steps,
        "equal": equal,
        "answered": answered,
        "p50_us": statistics.median(timings) * 1e6,
        "p99_us": sorted(timings)[int(0.99 * (len(timings) - 1))] * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show-unequal", action="store_true", help="print each step whose answers differ")
    add_smoke_flag(parser)
    args = parser.parse_args()
    episodes = draw_episodes()[:1] if args.smoke else draw_episodes()
    figures = asyncio.run(measure(episodes, show_unequal=args.show_unequal))
    share = figures["equal"] / figures["steps"]
    print(
        f"equal to the sandbox: {figures['equal']} of {figures['steps']} steps ({share:.1%}); "
        f"answered from state: {figures['answered']}; executor p50 {figures['p50_us']:.0f} us, p99 "
        f"{figures['p99_us']:.0f} us"
    )
    if args.smoke:
        return
    sandbox = "the same command lines in the sandbox image through the shell channel's real side"
    write_results(
        __file__,
        "The shell world state alone against the real sandbox (issue 37 workload)",
        [
            row(
                "steps whose answer equals the sandbox's",
                share * 100,
                "%",
                baseline=sandbox,
                target=">= 95",
                better="higher",
            ),
            row("steps answered from state", figures["answered"], f"of {figures['steps']}", better="higher"),
            row("executor time per step, p50", figures["p50_us"], "us", better="lower"),
            row("executor time per step, p99", figures["p99_us"], "us", better="lower"),
        ],
    )


if __name__ == "__main__":
    main()
