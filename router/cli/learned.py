"""`simroute train`, `simroute eval` and `simroute reload`: the learned router's commands.
Loading and showing the learned policy lives in `router/reports/learned_policy.py`."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from router.cli.common import ConfigOption, load_or_exit, read_store
from router.config import Config

ModelOption = Annotated[Path | None, typer.Option("--model", help="The model file (default: learned.model of the config).")]


def _rows(cfg: Config) -> list[dict[str, Any]]:
    return read_store(cfg, lambda store: store.recent(limit=cfg.learned.max_records))


def stored_rows(cfg: Config) -> list[dict[str, Any]]:
    """The records the learned router's statistics start from: none before the store exists."""
    exists = cfg.store.redis_url is not None or cfg.store_path.exists()
    return _rows(cfg) if exists else []


def _settings(cfg: Config):
    from policies.learned.policy import LearnedSettings
    from policies.learned.training import TrainingSettings
    from router.runtime.policy_chain import learned_settings

    live: LearnedSettings = learned_settings(cfg)
    return TrainingSettings(
        target_fidelity=cfg.learned.target_fidelity,
        sim_price=live.sim_price,
        latency_weight=live.latency_weight,
        real_price=live.real_price,
    )


def train(config: ConfigOption = None, model: ModelOption = None) -> None:
    """Train the learned router on the store's shadow records: one calibrated classifier per
    route (sim, replay), with cross-validated ROC-AUC and calibration, the share-vs-fidelity
    curve, and the threshold for learned.target_fidelity. Saves the model and its card."""
    from rich.console import Console
    from rich.progress import Progress

    from policies.learned.features import N_BITS, feature_names
    from policies.learned.labels import labels_from_rows
    from policies.learned.persistence import card_path, now_iso, save_model
    from policies.learned.training import steps_for
    from policies.learned.training import train as train_routes

    cfg = load_or_exit(config)
    console = Console()
    rows = _rows(cfg)
    labels = labels_from_rows(rows, max_divergence=cfg.learned.max_divergence)
    if not labels:
        typer.echo(
            "simroute: no labels yet: shadow some calls first (mode: shadow, shadow.rate, or repeated real calls for replay)", err=True
        )
        raise typer.Exit(1)
    settings = _settings(cfg)
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("training", total=steps_for(labels, settings))
        result = train_routes(labels, settings, advance=lambda what: progress.update(task, advance=1, description=what or "training"))
    path = model or cfg.learned_model_path
    card = {
        "simroute_version": _version(),
        "created": now_iso(),
        "target_fidelity": cfg.learned.target_fidelity,
        "max_divergence": cfg.learned.max_divergence,
        "features": feature_names(),
        "n_bits": N_BITS,
        "data": {
            "records": len(rows),
            "labels": {r: rep.labels for r, rep in result.reports.items()},
            "first": _iso(min(r["ts"] for r in rows)),
            "last": _iso(max(r["ts"] for r in rows)),
        },
        "routes": {route: report.to_json() for route, report in result.reports.items()},
    }
    save_model(path, result.classifiers, result.thresholds, n_bits=N_BITS, card=card)
    print_reports(console, result.reports, target=cfg.learned.target_fidelity)
    console.print(f"saved {path} and {card_path(path)} ({len(rows)} records, {len(labels)} labels)")


def print_reports(console, reports, *, target: float) -> None:
    from rich.table import Table

    for route, report in reports.items():
        if not report.trained:
            console.print(
                f"[bold]{route}[/]: {report.labels} labels ({report.acceptable} acceptable): no classifier — {report.why_not}; "
                "the per-tool Beta-Binomial estimate decides this route"
            )
            continue
        console.print(
            f"[bold]{route}[/]: {report.labels} labels ({report.acceptable} acceptable), cross-validated ROC-AUC "
            f"{report.auc:.3f}, Brier {report.brier:.3f}"
        )
        console.print(
            "  calibration (predicted -> acceptable, count): "
            + ", ".join(f"{b['predicted']:.2f}->{b['acceptable']:.2f} ({b['count']})" for b in report.calibration)
        )
        table = Table(
            "threshold", f"share to {route}", "fidelity kept", "real calls saved", "cost saved", title=f"{route}: share vs fidelity"
        )
        for point in report.curve:
            mark = " *" if report.chosen is not None and point.threshold == report.chosen.threshold else ""
            table.add_row(
                f"{point.threshold:.3f}{mark}",
                f"{point.share:.1%}",
                f"{point.fidelity:.3f}",
                str(point.real_calls_saved),
                f"{point.cost_saved:.2f}",
            )
        console.print(table)
        chosen = report.chosen
        console.print(
            f"  threshold for fidelity {target:g}: {chosen.threshold:.3f} -> {chosen.share:.1%} of calls to {route}, "
            f"fidelity {chosen.fidelity:.3f}, {chosen.real_calls_saved} real calls and {chosen.cost_saved:.2f} cost saved"
        )


def evaluate(config: ConfigOption = None, model: ModelOption = None) -> None:
    """Replay the stored records through the config's policy (rules, mode, a trained model)
    and print the share of calls per route, the fidelity kept and the cost saved."""
    from rich.console import Console

    from router.reports.learned_eval import evaluate_rows

    cfg = load_or_exit(config)
    report = evaluate_rows(cfg, _rows(cfg), model_path=model)
    Console().print(report.render())


def reload(config: ConfigOption = None) -> None:
    """Make running routers load the model file: with a Redis store it is published there
    (every replica loads it), else the file is touched (the router watches it). A model
    that does not load is refused here, before any router sees it."""
    import asyncio

    from policies.errors import ModelLoadError
    from policies.learned.persistence import load_model
    from router.runtime.learned_service import touch

    cfg = load_or_exit(config)
    path = cfg.learned_model_path
    try:
        loaded = load_model(path)
    except ModelLoadError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    if cfg.store.redis_url is None:
        touch(path)
        typer.echo(f"touched {path}: routers watching it load model {loaded.digest}")
        return
    from shadow.store.protocol import StoreError

    async def publish() -> None:
        store = await cfg.open_store().open()
        try:
            await store.publish_model(path.read_bytes(), loaded.digest)
        finally:
            await store.aclose()

    try:
        asyncio.run(publish())
    except StoreError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"published model {loaded.digest} on {cfg.store.redis_url}: every replica loads it")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("simroute")
    except PackageNotFoundError:
        return "unknown"


def _iso(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).isoformat(timespec="seconds")


__all__ = ["evaluate", "reload", "stored_rows", "train"]
