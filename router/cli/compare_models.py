"""`simroute compare-models`: candidate world models measured on held-out recorded
sessions (router/reports/compare_run.py), as the table a team chooses what to
serve from (router/reports/model_compare.py)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from router.cli.common import ConfigOption, load_or_exit
from router.config import Config

ModelOption = Annotated[
    list[str],
    typer.Option(
        "--model",
        "-m",
        help=(
            "A candidate: NAME=FILE.gguf (in-process), NAME=FILE.gguf+ADAPTER.gguf (with a LoRA adapter) "
            "or NAME=http://host:port/v1 (OpenAI-compatible); repeat for several."
        ),
    ),
]


def compare_models(
    models: ModelOption,
    config: ConfigOption = None,
    session: Annotated[list[str] | None, typer.Option(help="Hold out this recorded session; repeatable.")] = None,
    test_split: Annotated[
        Path | None, typer.Option(help="Hold out the sessions of an exported split file (agentworldbench/test.jsonl).")
    ] = None,
    test_fraction: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Else hold out this share of sessions (`simroute export`'s split).")
    ] = 0.1,
    seed: Annotated[int, typer.Option(help="The split's seed (the same as the export's: the same sessions).")] = 0,
    max_sessions: Annotated[int | None, typer.Option(min=1, help="Replay at most this many held-out sessions.")] = None,
    max_calls: Annotated[
        int | None, typer.Option(min=1, help="Simulate at most this many held-out calls per candidate.")
    ] = None,
    temperature: Annotated[
        float | None,
        typer.Option(min=0.0, help="Sampling temperature for every candidate (default: world_model.temperature)."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the rows and every call as JSON instead of the table.")
    ] = False,
    prompts: Annotated[
        Path | None, typer.Option(help="Also write every prompt sent to a candidate here (JSON lines).")
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(
            help="Also score each simulated call with a judge model at this OpenAI-compatible URL (`simroute judge`'s)."
        ),
    ] = None,
    judge_model: Annotated[str, typer.Option(help="The judge model's name at --judge.")] = "default",
    end_to_end: Annotated[
        bool,
        typer.Option(
            "--end-to-end",
            help=(
                "Answer each call as the sim route does with the world-state layer on (the session's state, "
                "aligned training sessions, then the model), instead of the model alone."
            ),
        ),
    ] = False,
) -> None:
    """Measure candidate world models on held-out recorded sessions: divergence from the
    real answers, per domain and tool."""
    from records.export.options import SessionSplit
    from router.reports.compare_run import parse_candidate
    from router.reports.held_out import HeldOut, sessions_of_split

    cfg = load_or_exit(config, tokens=True)  # the token namespaces decide which examples a session sees
    try:
        candidates = [parse_candidate(text) for text in models]
        if len({c.name for c in candidates}) < len(candidates):
            raise ValueError("two candidates have the same name (NAME=… tells them apart)")
        if session and test_split is not None:
            raise ValueError("--session and --test-split both name the held-out sessions: give one")
        if test_split is not None:
            held_out = HeldOut(sessions=sessions_of_split(test_split))
        elif session:
            held_out = HeldOut(sessions=frozenset(session))
        else:
            held_out = HeldOut(split=SessionSplit(test_fraction=test_fraction, seed=seed))
        if end_to_end and not cfg.world_state.enabled:
            raise ValueError("--end-to-end needs the world-state layer: world_state.enabled is false in the config")
    except (OSError, ValueError) as exc:
        raise typer.BadParameter(str(exc)) from exc
    if not cfg.store_location.exists():
        typer.echo(f"simroute: no records yet ({cfg.store_path} does not exist)", err=True)
        raise typer.Exit(1)
    document = asyncio.run(
        _run(
            cfg,
            candidates,
            held_out,
            max_sessions=max_sessions,
            max_calls=max_calls,
            temperature=temperature,
            prompts=prompts,
            judge=(judge, judge_model) if judge else None,
            end_to_end=end_to_end,
        )
    )
    if as_json:
        typer.echo(json.dumps(document, indent=2, ensure_ascii=False))
        return
    from router.reports.model_compare import ToolRow, render

    held = document["held_out"]
    typer.echo(f"held out: {held['sessions']} sessions, {held['calls']} calls with a real answer")
    typer.echo(render([ToolRow(**row) for row in document["rows"]]))
    if document["end_to_end"]:
        _echo_who_answered(document)


def _echo_who_answered(document: dict[str, Any]) -> None:
    """Per candidate, how many calls each part of the sim route answered (end to end)."""
    from collections import Counter

    for candidate in document["candidates"]:
        name = candidate["name"]
        counts = Counter(call["answered_by"] or "failed" for call in document["calls"] if call["candidate"] == name)
        typer.echo(f"{name} answered by: " + ", ".join(f"{sub} {n}" for sub, n in counts.most_common()))


async def _run(
    cfg: Config,
    candidates: list[Any],
    held_out: Any,
    *,
    max_sessions: int | None,
    max_calls: int | None,
    temperature: float | None,
    prompts: Path | None,
    judge: tuple[str, str] | None = None,
    end_to_end: bool = False,
) -> dict[str, Any]:
    from records.judge.run import JudgeUnavailable
    from records.store.protocol import StoreError
    from router.reports.compare_held_out import NoHeldOutCalls, compare_on_held_out

    judge_model = None
    if judge is not None:
        from router.runtime.judge_model import ModelRunnerJudge

        judge_model = ModelRunnerJudge.from_environment(judge[0], model=judge[1])
    sink = prompts.open("w", encoding="utf-8") if prompts is not None else None

    def on_prompt(candidate: Any, record: Any, messages: list[dict[str, Any]]) -> None:
        if sink is not None:
            line = {
                "candidate": candidate.name,
                "session": record.call.session_id,
                "step": record.step,
                "messages": messages,
            }
            sink.write(json.dumps(line, ensure_ascii=False) + "\n")

    try:
        return await compare_on_held_out(
            cfg,
            candidates,
            held_out,
            max_sessions=max_sessions,
            max_calls=max_calls,
            temperature=temperature,
            on_prompt=on_prompt,
            judge=judge_model,
            end_to_end=end_to_end,
        )
    except NoHeldOutCalls as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    except StoreError as exc:
        typer.echo(f"simroute: {exc}", err=True)
        raise typer.Exit(1) from exc
    except JudgeUnavailable as exc:
        typer.echo(f"simroute: the judge is unavailable: {exc}", err=True)
        raise typer.Exit(1) from exc
    finally:
        if judge_model is not None:
            await judge_model.aclose()
        if sink is not None:
            sink.close()
