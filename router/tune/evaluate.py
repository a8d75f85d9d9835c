"""The candidate against the base model on the run's held-out sessions (those of
`test.jsonl`), with `compare-models`' machinery: the same calls, each model built as
the router serves it, examples from the training side only, greedy sampling (the
same prompt, the same answer). With the world-state layer off, where the training
target applies (every call asks the model); and a second time under the name
`end_to_end` with the config's world-state layer on, when it is: each call answered
as the sim route answers it, from the session's state, an aligned training session,
else the model told the state (router/reports/compare_state.py). When the layer is
off in the config, end to end is the same run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from router.config import Config
from router.reports.compare_held_out import compare_on_held_out
from router.reports.compare_run import Candidate
from router.reports.held_out import HeldOut, sessions_of_split
from router.runtime.judge_model import ModelRunnerJudge
from router.tune.figures import BASE, CANDIDATE, figures

TEMPERATURE = 0.0


def candidates(base: Path, model: Path, adapter: Path | None) -> list[Candidate]:
    """The base model, and the candidate: the base with the adapter, or the merged model."""
    return [
        Candidate(BASE, str(base)),
        Candidate(CANDIDATE, str(model), str(adapter) if adapter is not None else None),
    ]


def state_layer_off(cfg: Config) -> Config:
    return cfg.model_copy(update={"world_state": cfg.world_state.model_copy(update={"enabled": False})})


def on_every_core(cfg: Config) -> Config:
    """`cfg` with the model runner on every core unless `world_model.threads` says
    otherwise: a router leaves half the cores to the rest of the stack, but the
    evaluation has the machine to itself (the training is over), and on 2 cores the
    second thread halves its wall time."""
    if cfg.world_model.threads is not None:
        return cfg
    wm = cfg.world_model.model_copy(update={"threads": os.cpu_count() or 1})
    return cfg.model_copy(update={"world_model": wm})


async def evaluate(
    cfg: Config,
    out: Path,
    model: Path,
    adapter: Path | None,
    *,
    max_calls: int | None = None,
    judge: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """The card's `evaluation` section (router/tune/card.py), and each setting's calls in
    `evaluation-<setting>.json` beside it; with `judge` (the judge model's URL and name),
    each well-formed simulated call is also scored by it (`simroute judge`'s prompt).
    Raises ValueError when nothing is held out, JudgeUnavailable when the judge is."""
    test = out / "test.jsonl"
    if not test.exists():
        raise ValueError("no held-out session (test.jsonl): raise --test-fraction to evaluate")
    held_out = HeldOut(sessions=sessions_of_split(test))
    cfg = on_every_core(cfg)
    pair = candidates(cfg.model_path, model, adapter)
    runs = {"state_layer_off": state_layer_off(cfg)}
    if cfg.world_state.enabled:
        runs["end_to_end"] = cfg
    documents = {}
    judge_model = ModelRunnerJudge.from_environment(judge[0], model=judge[1]) if judge is not None else None
    try:
        for setting, config in runs.items():
            documents[setting] = await compare_on_held_out(
                config,
                pair,
                held_out,
                max_calls=max_calls,
                temperature=TEMPERATURE,
                judge=judge_model,
                end_to_end=setting == "end_to_end",
            )
            _write(out / f"evaluation-{setting}.json", documents[setting])
    finally:
        if judge_model is not None:
            await judge_model.aclose()
    documents.setdefault("end_to_end", documents["state_layer_off"])
    held = documents["state_layer_off"]["held_out"]
    return {
        "held_out": {"sessions": held["sessions"], "calls": held["calls"]},
        "temperature": TEMPERATURE,
        "judge": {"model": judge[1]} if judge is not None else None,
        "end_to_end_same_as_state_layer_off": not cfg.world_state.enabled,
        **{setting: figures(document["calls"]) for setting, document in documents.items()},
    }


def _write(path: Path, document: dict[str, Any]) -> None:
    import json

    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
