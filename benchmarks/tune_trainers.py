"""The two ways to train the world model on a CPU, on the same examples of one tuning run:
`simroute tune`'s PyTorch route (a LoRA adapter of the attention projections, PEFT, the
loss on the targets only) and llama.cpp's own trainer (`llama-finetune` from the
llama.cpp vendored in the locked llama-cpp-python: the whole model, F32, next-token
loss on every token of a text file, windows of the context with half a context's stride).

The same work: the first `--examples` training examples of the run, each as the model
runner serves it (the prompt, the prefill, the target and the turn's end). The PyTorch
route trains on them as `simroute tune` does (router/tune/train.py, one epoch); the
llama.cpp trainer gets their text joined into one file, one epoch, context 512 (tune's
`--max-tokens`), the base model converted to an F32 GGUF (it trains F32 models only).
Rounds alternate the two; printed per route: the tokens forward and backward per second,
the epoch's wall time, the process's peak RSS; then their ratio (median over rounds).

Needs the training stack (`pip install -e '.[tune]'`), the conversion tools (`simroute
tune --prepare`), cmake (`pip install cmake`) for `--build`, and a run made by
`simroute tune` (its `base-hf/` and `train.jsonl`: `benchmarks/tune_loop.py --keep DIR`
leaves one in DIR/run). `--build` compiles `llama-finetune` from the cached source
package (as the set-up compiles llama-cpp-python: GGML_NATIVE off) into the cache once.

Usage: python benchmarks/tune_trainers.py RUN [--build] [--examples 48] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _results import row, write_results

from router.tune.examples import prompt_and_target
from router.tune.prepare import cache_folder, download_sdist, installed_version, tools_for

CONTEXT = 512  # tokens per window: `simroute tune`'s --max-tokens
# The progress bar's last line of an epoch: "train: [...] data=0000040/0000040 ... t=00:01:02 ETA=..."
PROGRESS = re.compile(r"train: .*?data=(\d+)/(\d+) .*?t=(\d+):(\d+):(\d+)")


def build_finetune(version: str) -> Path:
    """`llama-finetune` of llama-cpp-python `version`'s vendored llama.cpp, built once in the cache."""
    folder = cache_folder() / f"llama.cpp-{version}"
    binary = folder / "build" / "bin" / "llama-finetune"
    if binary.exists():
        return binary
    if shutil.which("cmake") is None:
        raise SystemExit("cmake is needed to build llama-finetune: pip install cmake")
    with tempfile.TemporaryDirectory() as scratch:
        sdist = download_sdist(version, Path(scratch))
        with tarfile.open(sdist, "r:gz") as archive:
            archive.extractall(scratch, filter="data")
        source = next(Path(scratch).glob("llama_cpp_python-*")) / "vendor" / "llama.cpp"
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(source, folder / "src")
    flags = ["-DGGML_NATIVE=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DCMAKE_BUILD_TYPE=Release"]
    subprocess.run(["cmake", "-S", folder / "src", "-B", folder / "build", *flags], check=True)
    subprocess.run(["cmake", "--build", folder / "build", "--target", "llama-finetune", "-j", "2"], check=True)
    return binary


def f32_model(run: Path, scratch: Path) -> Path:
    """The run's base model (`base-hf/`) as an F32 GGUF, what llama-finetune trains."""
    tools = tools_for(installed_version(), cache_folder())
    if not tools.ready():
        raise SystemExit("the conversion tools are missing: simroute tune --prepare")
    out = scratch / "base-f32.gguf"
    env = {**os.environ, "PYTHONPATH": str(tools.gguf_py), "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, tools.convert_hf, str(run / "base-hf"), "--outtype", "f32", "--outfile", str(out)]
    subprocess.run(command, check=True, capture_output=True, env=env)
    return out


def subset(run: Path, scratch: Path, count: int) -> Path:
    """A run folder holding the base model (linked) and the first `count` training lines."""
    folder = scratch / "torch-run"
    folder.mkdir()
    lines = (run / "train.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:count]
    (folder / "train.jsonl").write_text("".join(lines), encoding="utf-8")
    return folder


def training_text(run: Path, scratch: Path, count: int) -> Path:
    """The same examples' text, joined, for llama-finetune (served prompt + target each)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(run / "base-hf")
    lines = (run / "train.jsonl").read_text(encoding="utf-8").splitlines()[:count]
    text = "".join("".join(prompt_and_target(json.loads(line), tokenizer)) + "\n" for line in lines)
    path = scratch / "train.txt"
    path.write_text(text, encoding="utf-8")
    return path


def torch_epoch(run: Path, folder: Path) -> dict[str, float]:
    """One epoch of `simroute tune`'s training on `folder`'s lines, in its own process."""
    code = (
        "import json, resource, sys\n"
        "from pathlib import Path\n"
        "from router.tune.settings import Hyperparameters\n"
        "from router.tune.train import train\n"
        "_, _, h = train(Path(sys.argv[1]), Path(sys.argv[2]), Hyperparameters(epochs=1), resume=False,\n"
        "                progress=lambda total, done: (lambda n: None))\n"
        "e = h['epochs'][-1]\n"
        "print(json.dumps({'seconds': e['seconds'], 'tokens': e['tokens'],\n"
        "                  'rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n"
    )
    shutil.rmtree(folder / "checkpoints", ignore_errors=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(folder), str(run / "base-hf")], capture_output=True, text=True, env=env
    )
    if done.returncode != 0:
        raise SystemExit(f"the PyTorch route failed: {done.stderr[-2000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def llama_epoch(binary: Path, model: Path, text: Path, scratch: Path) -> dict[str, float]:
    """One epoch of llama-finetune over `text` (its own timing, from its progress line)."""
    command = [
        str(binary), "--model", str(model), "--file", str(text), "-c", str(CONTEXT), "-b", str(CONTEXT),
        "-ub", str(CONTEXT), "--epochs", "1", "--val-split", "0", "-t", "2", "-o", str(scratch / "finetuned.gguf"),
    ]  # fmt: skip
    wrapped = ["/usr/bin/time", "-f", "rss_kb=%M", *command]
    done = subprocess.run(wrapped, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"llama-finetune failed: {done.stderr[-2000:]}")
    last = PROGRESS.findall(done.stderr.replace("\r", "\n"))[-1]
    windows, hours, minutes, seconds = int(last[1]), int(last[2]), int(last[3]), int(last[4])
    rss_kb = int(re.findall(r"rss_kb=(\d+)", done.stderr)[-1])
    return {"seconds": hours * 3600 + minutes * 60 + seconds, "tokens": windows * CONTEXT, "rss_mb": rss_kb / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="a `simroute tune` run folder (base-hf/, train.jsonl)")
    parser.add_argument("--build", action="store_true", help="build llama-finetune into the cache if missing")
    parser.add_argument("--examples", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    version = installed_version()
    binary = cache_folder() / f"llama.cpp-{version}" / "build" / "bin" / "llama-finetune"
    if args.build:
        binary = build_finetune(version)
    if not binary.exists():
        raise SystemExit(f"{binary} is missing: run with --build once")
    with tempfile.TemporaryDirectory(prefix="tune-trainers-") as name:
        scratch = Path(name)
        model, folder = f32_model(args.run, scratch), subset(args.run, scratch, args.examples)
        text = training_text(args.run, scratch, args.examples)
        results: dict[str, list[dict[str, float]]] = {"torch": [], "llama": []}
        for round_ in range(1, args.rounds + 1):
            load = os.getloadavg()[0]
            started = time.perf_counter()
            results["torch"].append(torch_epoch(args.run, folder))
            results["llama"].append(llama_epoch(binary, model, text, scratch))
            print(f"round {round_}: {time.perf_counter() - started:.0f} s, load before {load:.2f}", file=sys.stderr)
            for route, runs in results.items():
                print(f"  {route}: {runs[-1]}", file=sys.stderr)
    report(results, args.examples)


def report(results: dict[str, list[dict[str, float]]], examples: int) -> None:
    def rate(figures: dict[str, float]) -> float:
        return figures["tokens"] / figures["seconds"]

    torch_rate = statistics.median(rate(f) for f in results["torch"])
    llama_rate = statistics.median(rate(f) for f in results["llama"])
    torch_epoch_s = statistics.median(f["seconds"] for f in results["torch"])
    llama_epoch_s = statistics.median(f["seconds"] for f in results["llama"])
    print(f"{examples} examples, {len(results['torch'])} rounds, load now {os.getloadavg()[0]:.2f}")
    print(f"PyTorch route (LoRA r16): {torch_rate:.0f} tokens/s, epoch {torch_epoch_s:.0f} s")
    print(f"llama-finetune (whole model, F32): {llama_rate:.0f} tokens/s, epoch {llama_epoch_s:.0f} s")
    print(
        f"llama.cpp / PyTorch: tokens/s {llama_rate / torch_rate:.2f}, epoch time {llama_epoch_s / torch_epoch_s:.2f}"
    )
    write_results(
        __file__,
        "Training the world model on a CPU: simroute tune's PyTorch route vs llama.cpp's own trainer",
        [
            row("PyTorch route, training tokens per second", torch_rate, "tokens/s", better="higher"),
            row("llama-finetune, training tokens per second", llama_rate, "tokens/s", better="higher"),
            row("llama-finetune / PyTorch, tokens per second", llama_rate / torch_rate, "ratio", better="higher"),
            row("PyTorch route, one epoch over the examples", torch_epoch_s, "s", better="lower"),
            row("llama-finetune, one epoch over the examples' text", llama_epoch_s, "s", better="lower"),
            row("PyTorch route, peak RSS", max(f["rss_mb"] for f in results["torch"]), "MB", better="lower"),
            row("llama-finetune, peak RSS", max(f["rss_mb"] for f in results["llama"]), "MB", better="lower"),
        ],
    )


if __name__ == "__main__":
    main()
