"""`simroute export`: records as world-model training data (records/export/), with
the prompts built by the live simulator's code (router/runtime/training_prompts.py)."""

from __future__ import annotations

import asyncio
import datetime
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from router.cli.common import ConfigOption, load_or_exit, server_and_tool, time_window
from router.cli.filter_options import ChannelOption, ServerOption, SessionOption, SinceOption, ToolOption, UntilOption
from router.cli.progress import TerminalProgress
from router.config import Config

FormatOption = Annotated[
    list[str] | None,
    typer.Option(
        "--format",
        "-f",
        help="agentworldbench, messages, preference (the world model's data: the default, all three) or trajectories "
        "(one line per agent session: tool calls, tool results, reward); repeat for several.",
    ),
]


def export(
    out: Annotated[
        Path,
        typer.Argument(
            help="The folder the dataset is written to (FORMAT/train.jsonl, FORMAT/test.jsonl, dataset.json)."
        ),
    ],
    config: ConfigOption = None,
    formats: FormatOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    channel: ChannelOption = None,
    tool: ToolOption = None,
    server: ServerOption = None,
    session: SessionOption = None,
    min_divergence: Annotated[
        float | None,
        typer.Option(
            min=0.0, max=1.0, help="Only shadowed calls whose sides diverged at least this much (the hard cases)."
        ),
    ] = None,
    hardest_first: Annotated[
        bool,
        typer.Option(
            "--hardest-first",
            help=(
                "Within each file, the records whose shadow sides diverged most first; those without a divergence last."
            ),
        ),
    ] = False,
    status: Annotated[
        list[str] | None,
        typer.Option(help="Only records of this status; repeat for several (default: complete, pending, skipped)."),
    ] = None,
    provenance: Annotated[
        list[str] | None,
        typer.Option(
            help="Only calls the agent was served this provenance (real, sim, replay, fork, none); repeatable."
        ),
    ] = None,
    token: Annotated[
        list[str] | None, typer.Option(help="Only the sessions of this token's namespace; repeatable.")
    ] = None,
    test_fraction: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="The share of sessions in the test split.")
    ] = 0.1,
    seed: Annotated[int, typer.Option(help="The split's seed: the same seed, the same split.")] = 0,
    demonstrations: Annotated[
        bool,
        typer.Option(
            help="Show in each prompt the recorded answers of the same tool the served prompt shows "
            "(from train-side sessions only); off: the session's own turns only."
        ),
    ] = True,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace a dataset already in OUT.")] = False,
) -> None:
    """Export records as world-model training data: real observations as targets, the
    prompts the live world model gets."""
    from records.export.options import DEFAULT_FORMATS, ExportFilter, ExportPlan, SessionSplit

    cfg = load_or_exit(config)
    since_ts, until_ts = time_window(since, until)
    server, tool = server_and_tool(server, tool)
    try:
        plan = ExportPlan(
            formats=tuple(dict.fromkeys(formats or DEFAULT_FORMATS)),
            filter=ExportFilter(
                since=since_ts,
                until=until_ts,
                channel=channel,
                server=server,
                tool=tool,
                session=session,
                min_divergence=min_divergence,
                statuses=tuple(status or ("complete", "pending", "skipped")),
                provenances=tuple(provenance or ()),
                tokens=tuple(token or ()),
            ),
            split=SessionSplit(test_fraction=test_fraction, seed=seed),
            hardest_first=hardest_first,
            demonstrations=demonstrations,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if (out / "dataset.json").exists() and not overwrite:
        typer.echo(f"simroute: {out} already holds a dataset (--overwrite replaces it)", err=True)
        raise typer.Exit(1)
    if not cfg.store_location.exists():
        typer.echo(f"simroute: no records yet ({cfg.store_path} does not exist)", err=True)
        raise typer.Exit(1)
    document = asyncio.run(_run(cfg, plan, out))
    lines = document["counts"]["lines"]
    summary = ", ".join(f"{name} {sides['train']}/{sides['test']}" for name, sides in lines.items())
    typer.echo(
        f"simroute: exported {summary} (train/test lines) from {document['counts']['records_read']} records to {out}",
        err=True,
    )
    empty = [
        f"{name}/{side}" for name, sides in document["files"].items() for side, path in sides.items() if path is None
    ]
    if empty:
        typer.echo(
            f"simroute: no lines, so no file, for {', '.join(empty)} (dataset.json lists the files written)", err=True
        )


async def _run(cfg: Config, plan: Any, out: Path) -> dict[str, Any]:
    from records.export.run import card, export
    from records.store.protocol import StoreError
    from router.runtime.training_prompts import LivePrompts

    store = await cfg.open_store(read_only=True).open()
    try:
        builder = LivePrompts.for_plan(cfg, store, plan)
        with TerminalProgress("exporting", await store.count(), eta=True) as advance:
            counts = await export(store, builder, plan, out, progress=advance)
    except StoreError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    finally:
        await store.aclose()
    document = card(
        counts,
        plan,
        source=_source(cfg),
        version=_version(),
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        generation=builder.generation,
    )
    (out / "dataset.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return document


def _source(cfg: Config) -> dict[str, Any]:
    return cfg.store_location.public_source()


def _version() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("simroute")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
