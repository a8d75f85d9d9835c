"""`simroute train`, `simroute eval` and `simroute reload`: the learned router's commands.
Loading and showing the learned policy lives in `router/reports/learned_policy.py`."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from router.cli.common import ConfigOption, JsonOption, load_or_exit, print_json, read_store, report_console
from router.config import Config

ModelOption = Annotated[
    Path | None, typer.Option("--model", help="The model file (default: learned.model of the config).")
]


def _rows(cfg: Config) -> list[dict[str, Any]]:
    return read_store(cfg, lambda store: store.recent(limit=cfg.learned.max_records))


def _rows_and_catalog(cfg: Config):
    """The newest records and the tool definitions the safety gate reads (SQLite or Redis alike)."""
    from router.engine.tool_catalog import ToolCatalog

    async def query(store):
        rows = await store.recent(limit=cfg.learned.max_records)
        catalog = ToolCatalog()
        for server in sorted({*cfg.upstreams, *(row["server"] for row in rows if row.get("channel") == "mcp")}):
            virtual = cfg.virtual_servers.get(server)  # a virtual server's tools are as declared
            catalog.update(
                server, virtual.definitions() if virtual is not None else await store.load_tool_snapshot(server) or []
            )
        return rows, catalog

    return read_store(cfg, query)


def stored_rows(cfg: Config) -> list[dict[str, Any]]:
    """The records the learned router's statistics start from: none before the store exists."""
    return _rows(cfg) if cfg.store_location.exists() else []


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


def train(config: ConfigOption = None, model: ModelOption = None, json_output: JsonOption = False) -> None:
    """Train the learned router on the store's records: one calibrated classifier per route
    (sim, replay) where the labels allow, with cross-validated ROC-AUC and calibration; then
    decide the stored sessions again as the router would, per threshold, and pick the one
    that keeps learned.target_fidelity. Prints what the router would deliver and why the
    other calls stay real; saves the model and its card. With --json, prints the card
    (and where the model was saved) as one JSON object."""
    from rich.console import Console
    from rich.progress import Progress

    from policies.learned.features import N_BITS, feature_names
    from policies.learned.labels import labels_from_rows
    from policies.learned.persistence import card_path, now_iso, save_model
    from policies.learned.training import steps_for
    from policies.learned.training import train as train_routes
    from router.reports.train_curve import workload_curve
    from router.runtime.policy_chain import learned_tenancy

    cfg = load_or_exit(config)
    rows, catalog = _rows_and_catalog(cfg)
    labels = labels_from_rows(rows, max_divergence=cfg.learned.max_divergence, tenancy=learned_tenancy(cfg))
    if not labels:
        typer.echo(
            "simroute: no labels yet: shadow some calls first (mode: "
            "shadow, shadow.rate, or repeated real calls for replay)",
            err=True,
        )
        raise typer.Exit(1)
    settings = _settings(cfg)
    with Progress(console=Console(stderr=True), transient=True) as progress:  # progress is not the report: stderr
        task = progress.add_task("training", total=steps_for(labels, settings))
        result = train_routes(
            labels, settings, advance=lambda what: progress.update(task, advance=1, description=what or "training")
        )
        progress.update(task, description="deciding the stored sessions again")
        decided = workload_curve(cfg, rows, result.classifiers, catalog=catalog)
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
        "routes": {
            route: {
                **report.to_json(),
                **(
                    {"threshold": decided.thresholds[route], "curve": [p.to_json() for p in decided.curves[route]]}
                    if route in decided.curves
                    else {}
                ),
            }
            for route, report in result.reports.items()
        },
        "promise": decided.promise.to_json() if decided.promise is not None else None,
    }
    save_model(path, result.classifiers, decided.thresholds, n_bits=N_BITS, card=card)
    if json_output:
        print_json({"model": str(path), "card": str(card_path(path)), **card})
        return
    console = report_console()
    print_reports(console, result.reports, decided, target=cfg.learned.target_fidelity)
    console.print(f"saved {path} and {card_path(path)} ({len(rows)} records, {len(labels)} labels)")


def print_reports(console, reports, decided, *, target: float) -> None:
    from rich.table import Table

    from router.reports.learned_eval import render

    for route, report in reports.items():
        if not report.trained:
            console.print(
                f"[bold]{route}[/]: {report.labels} labels ({report.acceptable} "
                f"acceptable): no classifier — {report.why_not}; "
                "the evidence rule and the per-tool estimates decide this route"
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
            "threshold",
            "off real",
            "fidelity kept",
            "wrong answers",
            "cost saved",
            title=f"{route}: the stored sessions decided again",
        )
        for point in decided.curves.get(route, []):
            mark = " *" if point.threshold == decided.thresholds.get(route) else ""
            table.add_row(
                f"{point.threshold:.3f}{mark}",
                f"{point.off_real_share:.1%}",
                f"{point.fidelity:.3f}",
                str(point.wrong),
                f"{point.cost_saved:.2f}",
            )
        console.print(table)
    promise = decided.promise
    if promise is not None:
        console.print(
            render(
                promise,
                title=(
                    f"what the router would deliver (target fidelity {target:g}): the stored sessions decided "
                    "again, calls not labels"
                ),
            )
        )


SessionOption = Annotated[
    list[str] | None,
    typer.Option("--session", help="Decide only this session (repeatable), from what was known before its first call."),
]


def evaluate(
    config: ConfigOption = None,
    model: ModelOption = None,
    session: SessionOption = None,
    json_output: JsonOption = False,
) -> None:
    """Decide the stored sessions again through the config's policy (rules, mode, a trained
    model), each from a fresh session state and what was known at its start, and print
    the share of calls served off the real side, the fidelity kept against their real
    answers, and why the other calls stayed real."""
    from router.reports.learned_eval import evaluate_rows, render

    cfg = load_or_exit(config)
    rows, catalog = _rows_and_catalog(cfg)
    wanted = set(session) if session else None
    if wanted is not None and not wanted & {row["session"] for row in rows}:
        typer.echo(f"simroute: no records of session {', '.join(sorted(wanted))} in the store", err=True)
        raise typer.Exit(1)
    report = evaluate_rows(cfg, rows, catalog=catalog, model_path=model, sessions=wanted)
    if json_output:
        print_json(report.to_json())
        return
    title = f"policy replayed over stored sessions{f' (model {report.model})' if report.model else ''}"
    report_console().print(render(report, title=title))


def reload(config: ConfigOption = None) -> None:
    """Make running routers load the model file: with a Redis store it is published there
    (every replica loads it), else the file is touched (the router watches it). A model
    that does not load is refused here, before any router sees it."""
    import asyncio

    from policies.errors import ModelLoadError
    from policies.learned.persistence import load_model
    from records.store.protocol import StoreError

    cfg = load_or_exit(config)
    path = cfg.learned_model_path
    try:
        loaded = load_model(path)
    except ModelLoadError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    location = cfg.store_location

    async def publish() -> bool:
        store = location.open_store()  # opened by the publishing, if it needs the store
        try:
            return await location.shared_state(store).published_models().publish(path, path.read_bytes(), loaded.digest)
        finally:
            await store.aclose()

    try:
        to_every_replica = asyncio.run(publish())
    except StoreError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    if to_every_replica:
        typer.echo(f"published model {loaded.digest} on {cfg.store.redis_url}: every replica loads it")
    else:
        typer.echo(f"touched {path}: routers watching it load model {loaded.digest}")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("simroute")
    except PackageNotFoundError:
        return "unknown"


def _iso(ts: float) -> str:
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).isoformat(timespec="seconds")


__all__ = ["evaluate", "reload", "stored_rows", "train"]
