"""`simroute noise` and `simroute diff`: what shadowing learned, read from the record store."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from router.cli.common import ConfigOption, JsonOption, load_or_exit, print_json, read_store, report_console
from router.config import Config


def read_rows(cfg: Config) -> list[dict[str, Any]]:
    """Every record of the config's store, oldest first."""
    return read_store(cfg, lambda store: store.recent())


def noise(
    config: ConfigOption = None,
    as_json: JsonOption = False,
    noisy_only: Annotated[bool, typer.Option("--noisy", help="Only the paths called noise.")] = False,
) -> None:
    """Show the noise table learned from repeated real calls: per tool and path, how often
    two real answers to the same call disagreed there, and whether it counts as noise."""
    from records.store.noise_counts import NoiseRule
    from shadow.compare.noise import NoiseModel

    cfg = load_or_exit(config)
    model = NoiseModel(rule=NoiseRule(**cfg.shadow.noise.model_dump()))
    for key, name, stats in read_store(cfg, lambda store: store.noise_table()):  # the table the routers keep
        model.stats[key], model.names[key] = stats, name
    rows = [row for row in model.table() if row.noisy or not noisy_only]
    if as_json:
        for row in rows:
            print_json(
                {
                    "tool": row.tool,
                    "path": row.path,
                    "disagreements": row.disagreements,
                    "pairs": row.pairs,
                    "lower_bound": row.lower_bound,
                    "noisy": row.noisy,
                }
            )
        return
    if not rows:
        typer.echo("simroute: no real-vs-real pairs with a difference yet (the same call made twice on the real route)")
        return
    rule = model.rule
    typer.echo(f"noise: Wilson lower bound (z={rule.z:g}) >= {rule.min_rate:g} over >= {rule.min_pairs} pairs")
    for row in rows:
        typer.echo(
            f"{row.tool:32} {row.path:40} {row.disagreements:>4}/{row.pairs:<4} lower {row.lower_bound:5.3f}  "
            f"{'noisy' if row.noisy else '-'}"
        )


def diff(
    record_id: Annotated[
        str, typer.Argument(help="The record's id (or its first characters, as `simroute records` shows them).")
    ],
    config: ConfigOption = None,
    lines: Annotated[int, typer.Option(min=1, help="At most this many lines of each side.")] = 80,
) -> None:
    """Show a shadowed call's real and simulated sides side by side, divergent lines and
    paths marked (red), masked noise marked (dim)."""
    from records.store.queries import QueryError, record_by_id
    from router.cli.diff_view import render_diff

    cfg = load_or_exit(config)
    try:
        row = read_store(cfg, lambda store: record_by_id(store, record_id))  # SQLite or Redis
    except QueryError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    if not row.get("shadow"):
        typer.echo(
            f"simroute: record {row['id']} has no simulated side (route {row['route']}, status {row['status']})",
            err=True,
        )
        raise typer.Exit(1)
    report_console().print(render_diff(row, max_lines=lines))
