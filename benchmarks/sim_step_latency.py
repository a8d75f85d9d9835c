"""Simulated step latency and prompt tokens evaluated per step, as a session grows.

One agent session of 20 `get_current_time` steps through the in-process GGUF
world model, then 4 sessions interleaved round-robin. Reports steps 1, 10 and 20
(interleaved: the mean over the 4 sessions). Without per-session prefix reuse,
step 20 would re-evaluate the whole history; the target is step 20 <= 1.5x step 1.

Usage: python benchmarks/sim_step_latency.py [--steps 20] [--sessions 4] [--model PATH] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from _results import add_smoke_flag, row, write_results
from _time_tools import DEFAULT_MODEL, ZONES, time_domain

from backends.world_model.llama_runner import LlamaCppRunner
from backends.world_model.simulator import WorldModelSimulator
from calls import Call, Observation, Provenance, Session, Turn


class MeasuredModelRunner:
    """Passes through to the model runner, keeping each completion's figures."""

    def __init__(self, model_runner: LlamaCppRunner) -> None:
        self.model_runner = model_runner
        self.last = None

    async def start(self) -> None:
        await self.model_runner.start()

    def count_tokens(self, text: str) -> int:
        return self.model_runner.count_tokens(text)

    async def complete(self, messages, **kwargs):
        self.last = await self.model_runner.complete(messages, **kwargs)
        return self.last

    async def aclose(self) -> None:
        await self.model_runner.aclose()


async def step(
    simulator: WorldModelSimulator, measured: MeasuredModelRunner, session: Session, index: int
) -> tuple[float, int, int]:
    call = Call("mcp", "time", "get_current_time", {"timezone": ZONES[index % len(ZONES)]}, session.id)
    started = time.perf_counter()
    observation = await simulator.simulate(call, session, deadline_s=120)
    latency = time.perf_counter() - started
    if observation.is_error:
        raise RuntimeError(f"simulation failed at step {index + 1}: {observation.text}")
    # The agent saw this observation: it becomes history for the next step.
    session.history.append(
        Turn(call, Observation(observation.content, Provenance.SIM, structured=observation.structured))
    )
    return latency, measured.last.evaluated_tokens, measured.last.prompt_tokens


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    add_smoke_flag(parser)
    options = parser.parse_args()
    if options.smoke:
        options.steps, options.sessions = 2, 2

    model_runner = LlamaCppRunner(Path(options.model), n_ctx=4096, cached_sessions=options.sessions, temperature=0.0)
    measured = MeasuredModelRunner(model_runner)
    domain = time_domain()
    simulator = WorldModelSimulator(measured, domains={"mcp": domain}, max_tokens=96, context_tokens=4096)
    await measured.start()  # loading is not part of any step
    report_steps = [s for s in (1, 10, 20) if s <= options.steps]

    single = Session("single")
    single_rows = [await step(simulator, measured, single, i) for i in range(options.steps)]

    sessions = [Session(f"interleaved-{n}") for n in range(options.sessions)]
    interleaved_rows: list[list[tuple[float, int, int]]] = [[] for _ in sessions]
    for i in range(options.steps):
        for n, session in enumerate(sessions):
            interleaved_rows[n].append(await step(simulator, measured, session, i))
    await measured.aclose()

    print(f"\nSmolLM2-135M GGUF in-process, get_current_time, {options.steps} steps\n")
    print(f"{'case':28} {'step':>5} {'latency s':>10} {'evaluated':>10} {'prompt':>8}")
    ratios = {}
    rows = []
    for label, rows_per_session in (
        ("one session", [single_rows]),
        (f"{options.sessions} sessions interleaved", interleaved_rows),
    ):
        for s in report_steps:
            latency = statistics.fmean(rows[s - 1][0] for rows in rows_per_session)
            evaluated = statistics.fmean(rows[s - 1][1] for rows in rows_per_session)
            prompt = statistics.fmean(rows[s - 1][2] for rows in rows_per_session)
            print(f"{label:28} {s:5d} {latency:10.3f} {evaluated:10.0f} {prompt:8.0f}")
            rows.append(row(f"{label}, step {s} latency", latency, "s", better="lower"))
            rows.append(
                row(
                    f"{label}, step {s} prompt tokens evaluated",
                    evaluated,
                    "tokens",
                    baseline=f"{prompt:.0f} tokens in the prompt",
                    better="lower",
                )
            )
        first = statistics.fmean(rows[0][0] for rows in rows_per_session)
        last = statistics.fmean(rows[report_steps[-1] - 1][0] for rows in rows_per_session)
        ratios[label] = last / first
    print()
    for label, ratio in ratios.items():
        print(f"{label}: step {report_steps[-1]} / step 1 latency = {ratio:.2f}  (target <= 1.5)")
        rows.append(
            row(
                f"{label}: step {report_steps[-1]} / step 1 latency",
                ratio,
                "ratio",
                baseline="step 1 of the same session(s)",
                target="<= 1.5",
                better="lower",
            )
        )
    if not options.smoke:
        write_results(__file__, "Simulated step latency as a session grows (bundled GGUF world model in-process)", rows)


if __name__ == "__main__":
    asyncio.run(main())
