"""`simroute judge`: a judge model scores simulated observations against the real
ones on AgentWorldBench's five dimensions (records/judge/), with real-vs-real control
pairs for calibration; the scores are stored beside the records (the dashboard's
fidelity view shows them). The judge is any OpenAI-compatible endpoint, reached
through the model runners (router/runtime/judge_model.py)."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import typer

from router.cli.common import (
    ConfigOption,
    JsonOption,
    load_or_exit,
    print_json,
    report_console,
    server_and_tool,
    time_window,
)
from router.cli.filter_options import ChannelOption, ServerOption, SessionOption, SinceOption, ToolOption, UntilOption
from router.cli.progress import TerminalProgress
from router.config import Config


def judge(
    endpoint: Annotated[
        str, typer.Option(help="The judge's OpenAI-compatible base URL (e.g. http://127.0.0.1:8080/v1).")
    ],
    config: ConfigOption = None,
    model: Annotated[
        str, typer.Option(help="The judge model's name at the endpoint (scores are stored under it).")
    ] = "default",
    limit: Annotated[int, typer.Option(min=0, help="Simulated pairs to judge, at most.")] = 200,
    controls: Annotated[
        int, typer.Option(min=0, help="Real-vs-real control pairs to judge, at most (one per call).")
    ] = 50,
    deadline: Annotated[float, typer.Option(min=0.001, help="Seconds each judge call may take.")] = 120.0,
    max_tokens: Annotated[int, typer.Option(min=16, help="Tokens the judge may write per verdict.")] = 256,
    since: SinceOption = None,
    until: UntilOption = None,
    channel: ChannelOption = None,
    tool: ToolOption = None,
    server: ServerOption = None,
    session: SessionOption = None,
    min_divergence: Annotated[
        float | None,
        typer.Option(min=0.0, max=1.0, help="Only shadowed calls whose sides diverged at least this much."),
    ] = None,
    token: Annotated[
        list[str] | None, typer.Option(help="Only the sessions of this token's namespace; repeatable.")
    ] = None,
    store_scores: Annotated[
        bool, typer.Option("--store/--no-store", help="Store the scores beside the records.")
    ] = True,
    json_output: JsonOption = False,
) -> None:
    """Score simulated observations against the real ones with a judge model (five
    dimensions, 1–5 and 0–100), calibrated by real-vs-real pairs."""
    from records.export.options import ExportFilter
    from records.judge.run import JudgePlan

    cfg = load_or_exit(config)
    since_ts, until_ts = time_window(since, until)
    server, tool = server_and_tool(server, tool)
    if not endpoint.startswith(("http://", "https://")):
        raise typer.BadParameter(f"the endpoint must be an http(s) URL, got {endpoint!r}", param_hint="--endpoint")
    try:
        plan = JudgePlan(
            where=ExportFilter(
                since=since_ts,
                until=until_ts,
                channel=channel,
                server=server,
                tool=tool,
                session=session,
                min_divergence=min_divergence,
                tokens=tuple(token or ()),
            ),
            simulated=limit,
            controls=controls,
            deadline_s=deadline,
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    if not cfg.store_location.exists():
        typer.echo(f"simroute: no records yet ({cfg.store_path} does not exist)", err=True)
        raise typer.Exit(1)
    report = asyncio.run(
        _run(cfg, plan, endpoint=endpoint, model=model, max_tokens=max_tokens, store_scores=store_scores)
    )
    if json_output:
        print_json(report)
    else:
        from router.reports.judge import render

        report_console().print(*render(report))


async def _run(
    cfg: Config, plan: Any, *, endpoint: str, model: str, max_tokens: int, store_scores: bool
) -> dict[str, Any]:
    from records.judge.report import report
    from records.judge.run import JudgeUnavailable, judge
    from records.store.protocol import StoreError
    from router.runtime.judge_model import ModelRunnerJudge

    judge_model = ModelRunnerJudge.from_environment(endpoint, model=model, max_tokens=max_tokens)
    # Scores are written beside the records: the store is opened for writing only then.
    store = await cfg.open_store(read_only=not store_scores).open()
    try:
        with TerminalProgress("judging", plan.simulated + plan.controls) as advance:
            run = await judge(store, judge_model, plan, scores=store if store_scores else None, progress=advance)
    except (StoreError, JudgeUnavailable) as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    finally:
        await judge_model.aclose()
        await store.aclose()
    return report(run, judge=model, endpoint=endpoint)
