"""What a tuned LoRA adapter adds to a simulated call's latency (issue 39: ≤ 10 %).

The bundled GGUF world model in-process, loaded twice: plain, and with a LoRA adapter of
exactly the shape `simroute tune` trains by default (router/tune/settings.py: its rank,
alpha and adapted attention projections), written with seeded small random values (a
zero `lora_b` would change nothing, and a trained adapter is not zero either; llama.cpp
applies an adapter whatever its values, so the work is the same as a trained one's).
Both answer the same simulated `get_current_time` calls (temperature 0, a fixed
max_tokens), one call on each side in turn, the side going first alternating by round,
after an untimed warm-up on each; a round is one agent session of `--calls` calls.

Per side: median and p90 latency per call, prompt tokens evaluated and tokens generated
per call, and llama.cpp's own prompt-evaluation and generation times. The adapter's values
may change what the model writes, hence the work: the target is judged on time per token
evaluated + generated (the per-call latency ratio is reported beside it), round by round.

Usage: python benchmarks/adapter_latency.py [--rounds 8] [--calls 5] [--max-tokens 64] [--model PATH] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from _results import add_smoke_flag, row, write_results  # noqa: E402
from _time_tools import DEFAULT_MODEL, ZONES, time_domain  # noqa: E402
from kit.lora import write_lora_adapter  # noqa: E402  (the tests' kit, as other benchmarks import it)
from kit.tiny_llama import write_tiny_llama  # noqa: E402

from backends.world_model.llama_runner import LlamaCppRunner  # noqa: E402
from backends.world_model.simulator import WorldModelSimulator  # noqa: E402
from calls import Call, Observation, Provenance, Session, Turn  # noqa: E402
from router.tune.settings import Hyperparameters  # noqa: E402

TARGET = 1.10
# PEFT's module names (what `simroute tune` adapts) and the GGUF weights they become
# (convert_lora_to_gguf.py's mapping for the llama architecture).
GGUF_WEIGHT = {
    "q_proj": "attn_q",
    "k_proj": "attn_k",
    "v_proj": "attn_v",
    "o_proj": "attn_output",
    "gate_proj": "ffn_gate",
    "up_proj": "ffn_up",
    "down_proj": "ffn_down",
}
# Small values, as a trained adapter's: the answers may still differ from the base's.
SPREAD = 0.02
WARM_UP_ZONE = "UTC"


@dataclass(frozen=True, slots=True)
class Measured:
    latency_s: float
    evaluated: int  # prompt tokens evaluated (not reused from a cached prefix)
    generated: int
    prompt_eval_s: float  # llama.cpp's own timings of this call
    generation_s: float

    @property
    def tokens(self) -> int:
        return self.evaluated + self.generated


class RecordedRunner:
    """Passes through to the model runner, keeping the completions of the current call."""

    def __init__(self, model_runner: LlamaCppRunner) -> None:
        self.model_runner = model_runner
        self.completions: list = []

    async def start(self) -> None:
        await self.model_runner.start()

    def count_tokens(self, text: str) -> int:
        return self.model_runner.count_tokens(text)

    async def complete(self, messages, **kwargs):
        self.completions.append(await self.model_runner.complete(messages, **kwargs))
        return self.completions[-1]

    async def aclose(self) -> None:
        await self.model_runner.aclose()


class Side:
    """One runner (base or adapter) and its simulator; each call's figures, llama.cpp's
    timings read from its context's cumulative counters before and after the call."""

    def __init__(self, label: str, model: Path, lora: Path | None, max_tokens: int, *, noise: bool) -> None:
        self.label = label
        self.noise = noise  # the smoke's tiny random model: its answers are noise, failed ones expected
        # One context: the counters read are that context's (each round's session rebinds it).
        self.runner = LlamaCppRunner(model, n_ctx=4096, cached_sessions=1, temperature=0.0, lora_path=lora)
        self.recorded = RecordedRunner(self.runner)
        self.simulator = WorldModelSimulator(
            self.recorded, domains={"mcp": time_domain()}, max_tokens=max_tokens, context_tokens=4096
        )

    def _counters(self) -> tuple[float, float]:
        import llama_cpp

        data = llama_cpp.llama_perf_context(self.runner._pool.contexts[0].llama.ctx)
        return data.t_p_eval_ms / 1000, data.t_eval_ms / 1000

    async def call(self, session: Session, zone: str) -> Measured:
        call = Call("mcp", "time", "get_current_time", {"timezone": zone}, session.id)
        prompt_before, generation_before = self._counters()
        self.recorded.completions = completions = []
        started = time.perf_counter()
        observation = await self.simulator.simulate(call, session, deadline_s=300)
        latency = time.perf_counter() - started
        if observation.is_error and not self.noise:
            raise RuntimeError(f"{self.label}: simulation failed ({zone}): {observation.text}")
        session.history.append(
            Turn(call, Observation(observation.content, Provenance.SIM, structured=observation.structured))
        )
        prompt_after, generation_after = self._counters()
        return Measured(
            latency,
            sum(c.evaluated_tokens for c in completions),
            sum(c.completion_tokens for c in completions),
            prompt_after - prompt_before,
            generation_after - generation_before,
        )


def adapter_of_tune_shape(model: Path, folder: Path) -> tuple[Path, str]:
    """A LoRA adapter of `model` with `simroute tune`'s default rank, alpha and modules."""
    hyper = Hyperparameters()
    unknown = [m for m in hyper.target_modules if m not in GGUF_WEIGHT]
    if unknown:
        raise SystemExit(f"no GGUF weight known for the tuned modules {unknown}")
    weights = [GGUF_WEIGHT[m] for m in hyper.target_modules]
    path = write_lora_adapter(
        model,
        folder / "tune-shaped.lora.gguf",
        rank=hyper.lora_rank,
        alpha=hyper.lora_alpha,
        spread=SPREAD,
        weights=weights,
        seed=hyper.seed,
    )
    shape = f"rank {hyper.lora_rank}, alpha {hyper.lora_alpha:g}, {'/'.join(hyper.target_modules)}"
    return path, shape


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def per_token(calls: list[Measured]) -> float:
    return sum(c.latency_s for c in calls) / max(1, sum(c.tokens for c in calls))


async def run(options: argparse.Namespace, model: Path, adapter: Path) -> dict[str, list[list[Measured]]]:
    sides = [
        Side(label, model, lora, options.max_tokens, noise=options.smoke)
        for label, lora in (("base", None), ("adapter", adapter))
    ]
    for side in sides:
        started = time.perf_counter()
        await side.runner.start()  # loading is not part of any call
        loaded = time.perf_counter()
        # Nor the first call's one-off work (the system prompt read and its state kept). A zone
        # no round asks about: a round's first prompt must not be the warm-up's, whole, cached.
        await side.call(Session(f"warm-up-{side.label}"), WARM_UP_ZONE)
        print(f"{side.label}: loaded in {loaded - started:.1f} s, warm-up call {time.perf_counter() - loaded:.1f} s")
    rounds: dict[str, list[list[Measured]]] = {side.label: [] for side in sides}
    for r in range(options.rounds):
        sessions = {side.label: Session(f"round-{r}") for side in sides}
        order = sides if r % 2 == 0 else sides[::-1]
        for side in sides:
            rounds[side.label].append([])
        for i in range(options.calls):
            for side in order:
                # Offset by the round: a round's first prompt differs from the last round's (the
                # context still holds that session), so each call evaluates its own turn.
                zone = ZONES[(r + i) % len(ZONES)]
                rounds[side.label][-1].append(await side.call(sessions[side.label], zone))
        print(
            f"round {r + 1}/{options.rounds}: "
            + ", ".join(f"{label} {sum(c.latency_s for c in rs[-1]):.2f} s" for label, rs in rounds.items()),
            flush=True,
        )
    for side in sides:
        await side.runner.aclose()
    return rounds


def report(rounds: dict[str, list[list[Measured]]], shape: str, options: argparse.Namespace) -> list[dict]:
    rows = []
    print(f"\n{options.model_name} GGUF in-process, adapter {shape}; {options.rounds} rounds × {options.calls} calls\n")
    print(
        f"{'side':8} {'p50 s':>7} {'p90 s':>7} {'evaluated':>10} {'generated':>10} "
        f"{'prompt-eval s':>14} {'generation s':>13} {'ms/token':>9}"
    )
    for label, side_rounds in rounds.items():
        calls = [c for calls in side_rounds for c in calls]
        p50 = statistics.median(c.latency_s for c in calls)
        p90 = quantile([c.latency_s for c in calls], 0.9)
        evaluated = statistics.fmean(c.evaluated for c in calls)
        generated = statistics.fmean(c.generated for c in calls)
        prompt_eval = statistics.fmean(c.prompt_eval_s for c in calls)
        generation = statistics.fmean(c.generation_s for c in calls)
        ms_per_token = per_token(calls) * 1000
        print(
            f"{label:8} {p50:7.3f} {p90:7.3f} {evaluated:10.1f} {generated:10.1f} "
            f"{prompt_eval:14.3f} {generation:13.3f} {ms_per_token:9.2f}"
        )
        rows += [
            row(f"{label}: latency per call, p50", p50, "s", better="lower"),
            row(f"{label}: latency per call, p90", p90, "s", better="lower"),
            row(f"{label}: prompt tokens evaluated per call", evaluated, "tokens"),
            row(f"{label}: tokens generated per call", generated, "tokens"),
            row(f"{label}: prompt evaluation per call (llama.cpp)", prompt_eval, "s", better="lower"),
            row(f"{label}: generation per call (llama.cpp)", generation, "s", better="lower"),
            row(f"{label}: latency per token evaluated + generated", ms_per_token, "ms", better="lower"),
        ]
    base, adapter = rounds["base"], rounds["adapter"]
    token_ratios = [per_token(a) / per_token(b) for a, b in zip(adapter, base, strict=True)]
    call_ratios = [
        sum(c.latency_s for c in a) / sum(c.latency_s for c in b) for a, b in zip(adapter, base, strict=True)
    ]
    same_work = all(
        (x.evaluated, x.generated) == (y.evaluated, y.generated)
        for a, b in zip(adapter, base, strict=True)
        for x, y in zip(a, b, strict=True)
    )
    judged = statistics.median(token_ratios)
    print(f"\nthe same tokens evaluated and generated on both sides, call by call: {'yes' if same_work else 'no'}")
    print(
        f"adapter / base, per token evaluated + generated: median {judged:.3f} over {len(token_ratios)} rounds "
        f"(min {min(token_ratios):.3f}, max {max(token_ratios):.3f})  (target <= {TARGET})"
    )
    print(
        f"adapter / base, per call: median {statistics.median(call_ratios):.3f} "
        f"(min {min(call_ratios):.3f}, max {max(call_ratios):.3f})"
    )
    spread = f"rounds' min {min(token_ratios):.3f}, max {max(token_ratios):.3f}"
    rows += [
        row(
            "adapter / base latency per token evaluated + generated, median over rounds (the target's figure)",
            judged,
            "ratio",
            baseline=f"the base model, interleaved in the same rounds ({spread})",
            target=f"<= {TARGET}",
            better="lower",
        ),
        row(
            "adapter / base latency per call, median over rounds",
            statistics.median(call_ratios),
            "ratio",
            baseline=f"the base model, interleaved (rounds' min {min(call_ratios):.3f}, max {max(call_ratios):.3f})",
            better="lower",
        ),
    ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--calls", type=int, default=5, help="simulated calls per round (one session)")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    add_smoke_flag(parser)
    options = parser.parse_args()
    model = Path(options.model).expanduser()
    with tempfile.TemporaryDirectory(prefix="adapter-latency-") as folder:
        if options.smoke:
            # The bundled model reads the simulator's system prompt for tens of seconds on a busy
            # 2-core machine; a tiny random model of the same architecture takes the same path.
            options.rounds, options.calls, options.max_tokens = 2, 1, 32
            model = write_tiny_llama(model, Path(folder) / "tiny-llama.gguf")
        adapter, shape = adapter_of_tune_shape(model, Path(folder))
        rounds = asyncio.run(run(options, model, adapter))
    options.model_name = model.name
    rows = report(rounds, shape, options)
    if not options.smoke:
        write_results(
            __file__,
            f"A tuned LoRA adapter's cost per simulated call ({shape}; bundled GGUF world model in-process)",
            rows,
        )


if __name__ == "__main__":
    main()
