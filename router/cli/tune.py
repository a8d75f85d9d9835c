"""`simroute tune`: recorded traffic to a candidate world model (router/tune/): the
training data and the model card (all `--data-only` does), the training, the conversion
to GGUF and the evaluation against the base model; `--prepare` fetches the conversion
tools once. Training needs the optional training stack: without it the command says
how to install it (exit 2). The evaluated candidate is adopted by `--margin` or on
`--adopt` (router/tune/adoption.py): running routers swap it in; `--revert` goes back."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer

from router.cli.common import ConfigOption, load_or_exit
from router.config import Config

OutArgument = Annotated[
    Path | None,
    typer.Argument(
        help="The run's folder: training data (train.jsonl, test.jsonl), checkpoints, the candidate "
        "(adapter.gguf, or model.gguf with --merge) and its model card (MODEL_CARD.md, card.json).",
        show_default=False,
    ),
]


def tune(
    out: OutArgument = None,
    config: ConfigOption = None,
    from_export: Annotated[
        Path | None,
        typer.Option(help="Train on a `simroute export --format messages` folder instead of exporting the store."),
    ] = None,
    hardest_first: Annotated[
        bool, typer.Option("--hardest-first", help="The examples whose shadow sides diverged most first.")
    ] = False,
    min_divergence: Annotated[
        float | None,
        typer.Option(min=0.0, max=1.0, help="Only shadowed calls whose sides diverged at least this much."),
    ] = None,
    test_fraction: Annotated[
        float, typer.Option(min=0.0, max=0.99, help="The share of sessions held out for the evaluation.")
    ] = 0.1,
    seed: Annotated[
        int, typer.Option(help="The seed of the split and of the training: the same seed, the same run.")
    ] = 0,
    epochs: Annotated[
        int | None,
        typer.Option(min=1, help="Passes over the training examples [default: 1; with --resume, the run's]."),
    ] = None,
    learning_rate: Annotated[float, typer.Option(min=0.0, help="The optimiser's learning rate.")] = 2e-4,
    rank: Annotated[int, typer.Option(min=1, help="The LoRA adapter's rank (its alpha is twice the rank).")] = 16,
    max_tokens: Annotated[int, typer.Option(min=16, help="The longest example trained on, in tokens.")] = 512,
    adapter: Annotated[
        bool,
        typer.Option(
            "--adapter/--merge",
            help="The candidate: a LoRA adapter the base model loads (world_model.lora_path), or a merged model.",
        ),
    ] = True,
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the run in OUT from its last checkpoint, with its data.")
    ] = False,
    data_only: Annotated[
        bool,
        typer.Option("--data-only", help="Write the training data and the model card, then stop (no training stack)."),
    ] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Start over in an OUT that holds a run.")] = False,
    prepare: Annotated[
        bool,
        typer.Option(
            "--prepare",
            help="Download the locked llama-cpp-python source package once and extract llama.cpp's conversion "
            "scripts into the cache (~/.cache/simroute/tune/); nothing is downloaded while training.",
        ),
    ] = False,
    adopt: Annotated[
        bool, typer.Option("--adopt", help="Adopt the candidate whatever the evaluation says (else: by --margin).")
    ] = False,
    revert: Annotated[
        bool, typer.Option("--revert", help="Restore the world model adopted before the last one.")
    ] = False,
    margin: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0, help="Adopt without --adopt only when held-out fidelity beats the base's by this much."
        ),
    ] = 0.05,
    eval_calls: Annotated[
        int | None, typer.Option(min=1, help="Evaluate on at most this many held-out calls (default: all).")
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(
            help="Also score the evaluation's simulated calls with a judge model at this OpenAI-compatible URL "
            "(`simroute judge`'s prompt; its API key from SIMROUTE_JUDGE_API_KEY)."
        ),
    ] = None,
    judge_model: Annotated[str, typer.Option(help="The judge model's name at --judge.")] = "default",
) -> None:
    """Fine-tune the configured GGUF world model on the store's records (or an export):
    the training data with the live prompts, split by session, a LoRA adapter (or a
    merged model) trained on a CPU or a GPU, converted to GGUF, evaluated against the
    base model on the held-out sessions, adopted by margin or on --adopt."""
    from router.tune.adoption import decide
    from router.tune.extra import install_hint, missing_packages

    if prepare:
        if out is not None or data_only or resume or adopt or revert:
            raise typer.BadParameter("--prepare runs alone: `simroute tune --prepare`")
        raise typer.Exit(_prepare())
    if revert:
        if out is not None or adopt:
            raise typer.BadParameter("--revert runs alone: `simroute tune --revert --config CONFIG`")
        raise typer.Exit(_revert(load_or_exit(config)))
    if out is None:
        raise typer.BadParameter("OUT, the run's folder, is needed (or --prepare, --revert)")
    if adopt and (out / "card.json").is_file() and not (overwrite or resume):  # an evaluated run: adopted as it is
        raise typer.Exit(_adopt(load_or_exit(config), out, None))
    if from_export is not None and (hardest_first or min_divergence is not None):
        raise typer.BadParameter(
            "--hardest-first and --min-divergence choose what an export holds: not with --from-export"
        )
    if data_only and resume:
        raise typer.BadParameter("--resume continues a training run: not with --data-only")
    if data_only and judge is not None:
        raise typer.BadParameter("--judge scores the evaluation: not with --data-only")
    if not data_only and (missing := missing_packages()):
        typer.echo(f"simroute: {install_hint(missing)}", err=True)
        raise typer.Exit(2)
    settings = _settings(
        hardest_first, min_divergence, test_fraction, seed, epochs, learning_rate, rank, max_tokens, adapter, margin
    )
    cfg = load_or_exit(config)
    if cfg.world_model.engine != "llama":
        typer.echo("simroute: tune fine-tunes the in-process GGUF model (world_model.engine: llama)", err=True)
        raise typer.Exit(2)
    if (out / "card.json").exists() and not (overwrite or resume):
        typer.echo(f"simroute: {out} already holds a run (--resume continues it, --overwrite starts over)", err=True)
        raise typer.Exit(1)
    tools = None if data_only else _tools_or_exit()
    if resume and (out / "card.json").exists():
        settings = _resumed(settings, out, epochs)
        typer.echo(f"simroute: resuming the run in {out} ({settings.hyperparameters.epochs} epochs)", err=True)
    else:
        card = _data_and_card(cfg, settings, out, from_export)
        examples = card["data"]["examples"]
        typer.echo(
            f"simroute: {examples['train']} train and {examples['test']} test examples, and the model card, in {out}",
            err=True,
        )
    if tools is not None:
        card = _train_and_evaluate(
            cfg,
            settings,
            out,
            tools,
            resume=resume,
            eval_calls=eval_calls,
            judge=(judge, judge_model) if judge is not None else None,
        )
        raise typer.Exit(_adopt(cfg, out, decide(card, margin=margin, forced=adopt)))


def _adopt(cfg: Config, out: Path, decision: Any) -> int:
    """Adopt the run's candidate unless `decision` says not (None: --adopt on an evaluated run)."""
    from records.store.protocol import StoreError
    from router.tune.adoption import AdoptionRefused, adopt_run

    if decision is not None:
        typer.echo(f"simroute: {decision.reason}", err=True)
        if not decision.adopt:
            typer.echo(f"simroute: status: evaluated (`simroute tune {out} --adopt` adopts it anyway)", err=True)
            return 0
    try:
        adoption, _card = adopt_run(cfg, out)
    except AdoptionRefused as exc:
        typer.echo(f"simroute: adoption refused: {exc}", err=True)
        return 2
    except StoreError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        return 1
    typer.echo(
        f"simroute: adopted the {adoption.kind} {adoption.file} ({adoption.digest[:12]}) on {cfg.store_location.name}: "
        f"running routers swap it in between calls; status: adopted",
        err=True,
    )
    return 0


def _revert(cfg: Config) -> int:
    from records.shared_state.adopted_world_model import NothingAdopted
    from records.store.protocol import StoreError
    from router.tune.adoption import AdoptionRefused, revert

    try:
        restored = revert(cfg)
    except (AdoptionRefused, NothingAdopted) as exc:
        typer.echo(f"simroute: revert refused: {exc}", err=True)
        return 2
    except StoreError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        return 1
    now_used = (
        f"the {restored.kind} {restored.digest[:12]} adopted from {restored.run}"
        if restored
        else "the config's own world model"
    )
    typer.echo(f"simroute: reverted: running routers swap back to {now_used}", err=True)
    return 0


def _settings(
    hardest_first: bool,
    min_divergence: float | None,
    test_fraction: float,
    seed: int,
    epochs: int | None,
    learning_rate: float,
    rank: int,
    max_tokens: int,
    adapter: bool,
    margin: float,
) -> Any:
    from router.tune.settings import DEFAULT_EPOCHS, DataSettings, Hyperparameters, TuneSettings

    try:
        return TuneSettings(
            data=DataSettings(hardest_first, min_divergence, test_fraction, seed),
            hyperparameters=Hyperparameters(
                epochs=DEFAULT_EPOCHS if epochs is None else epochs,
                learning_rate=learning_rate,
                lora_rank=rank,
                lora_alpha=2.0 * rank,
                max_tokens=max_tokens,
                seed=seed,
            ),
            output="adapter" if adapter else "merged",
            margin=margin,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc


def _data_and_card(cfg: Config, settings: Any, out: Path, from_export: Path | None) -> dict[str, Any]:
    from router.tune.card import model_card, write_card
    from router.tune.data import TrainingDataError, copy_training_data, now, simroute_version

    out.mkdir(parents=True, exist_ok=True)
    try:
        if from_export is not None:
            dataset = copy_training_data(cfg, from_export, out)
        else:
            dataset = asyncio.run(_exported(cfg, settings, out))
    except TrainingDataError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    card = model_card(
        dataset=dataset, settings=settings, base_model=cfg.model_path, version=simroute_version(), created=now()
    )
    write_card(card, out)
    return card


async def _exported(cfg: Config, settings: Any, out: Path) -> dict[str, Any]:
    from records.store.protocol import StoreError
    from router.cli.progress import TerminalProgress
    from router.tune.data import export_training_data

    if not cfg.store_location.exists():
        typer.echo(f"simroute: no records yet ({cfg.store_path} does not exist)", err=True)
        raise typer.Exit(1)
    store = await cfg.open_store(read_only=True).open()
    try:
        with TerminalProgress("exporting", await store.count(), eta=True) as advance:
            return await export_training_data(cfg, store, settings.data, out, progress=advance)
    except StoreError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    finally:
        await store.aclose()


def _prepare() -> int:
    from router.tune.prepare import PrepareError, cache_folder, installed_version, prepare, tools_for

    try:
        version = installed_version()
        if not tools_for(version, cache_folder()).ready():
            typer.echo(f"simroute: downloading llama-cpp-python {version}'s source package (~77 MB, once)", err=True)
        tools, fetched = prepare(version, cache_folder())
    except PrepareError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        return 1
    done = "extracted to" if fetched else "already in"
    typer.echo(f"simroute: llama.cpp's conversion tools of llama-cpp-python {version} {done} {tools.folder}", err=True)
    return 0


def _resumed(settings: Any, out: Path, epochs: int | None) -> Any:
    """A resumed run's settings: the hyper-parameters its card recorded, --epochs raised when given."""
    from router.tune.run import read_card
    from router.tune.settings import resumed

    try:
        return resumed(settings, read_card(out)["hyperparameters"], epochs)
    except (KeyError, TypeError, ValueError) as exc:
        raise typer.BadParameter(f"{out}'s card.json has no usable hyper-parameters to resume with: {exc}") from exc


def _tools_or_exit() -> Any:
    from router.tune.prepare import PrepareError, cache_folder, installed_version, tools_for

    try:
        tools = tools_for(installed_version(), cache_folder())
    except PrepareError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(2) from exc
    if not tools.ready():
        typer.echo(
            "simroute: llama.cpp's conversion tools are not in the cache: run `simroute tune --prepare` once "
            "(training downloads nothing)",
            err=True,
        )
        raise typer.Exit(2)
    return tools


def _train_and_evaluate(
    cfg: Config,
    settings: Any,
    out: Path,
    tools: Any,
    *,
    resume: bool,
    eval_calls: int | None,
    judge: tuple[str, str] | None,
) -> dict[str, Any]:
    from contextlib import ExitStack

    from records.judge.run import JudgeUnavailable
    from router.cli.progress import TerminalProgress
    from router.tune.convert import ConversionError
    from router.tune.run import evaluate_candidate, train_and_convert
    from router.tune.train import TrainingError

    def say(text: str) -> None:
        typer.echo(f"simroute: {text}", err=True)

    try:
        with ExitStack() as bars:

            def progress(total: int, done: int) -> Any:
                advance = bars.enter_context(TerminalProgress("training", total, eta=True))
                advance(done)
                return advance

            card = train_and_convert(cfg, settings, out, tools, resume=resume, progress=progress, say=say)
        epochs = card["training"]["epochs"]
        speed = ", ".join(f"epoch {e['epoch']}: {e['tokens_per_s']} tokens/s, loss {e['mean_loss']}" for e in epochs)
        say(f"trained on {card['training']['device']} ({speed}); candidate: {out / card['candidate']['file']}")
        say("evaluating the candidate against the base model on the held-out sessions")
        card = evaluate_candidate(cfg, out, max_calls=eval_calls, judge=judge)
    except (TrainingError, ConversionError, ValueError) as exc:
        say(str(exc))
        raise typer.Exit(1) from exc
    except JudgeUnavailable as exc:
        say(f"the judge is unavailable: {exc} (the candidate is kept: {out / 'card.json'}, status trained)")
        raise typer.Exit(1) from exc
    off = card["evaluation"]["state_layer_off"]
    say(
        f"held-out fidelity (world-state layer off): base {off['fidelity']['base']}, "
        f"candidate {off['fidelity']['candidate']}; well-formed: base {off['well_formed_rate']['base']}, "
        f"candidate {off['well_formed_rate']['candidate']} (MODEL_CARD.md in {out})"
    )
    return card
