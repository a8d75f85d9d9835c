"""A tuning run after its data: the base model from the GGUF file, the training, the
conversion back to GGUF (checked in llama-cpp-python) and the evaluation against the
base model, each step recorded in the model card as it ends (status `trained`, then
`evaluated`). Needs the training stack and the conversion tools (`--prepare`)."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from router.config import Config
from router.tune.card import CARD_JSON, sha256_of, write_card
from router.tune.prepare import ConversionTools
from router.tune.settings import TuneSettings

Say = Callable[[str], None]
Progress = Callable[[int, int], Callable[[int], None]]


def train_and_convert(
    cfg: Config,
    settings: TuneSettings,
    out: Path,
    tools: ConversionTools,
    *,
    resume: bool,
    progress: Progress,
    say: Say,
) -> dict[str, Any]:
    """Trains, converts and checks the candidate; returns the card, status `trained`."""
    from router.tune.base_model import base_folder
    from router.tune.convert import check_loads, convert_adapter, convert_merged
    from router.tune.train import save_adapter, save_merged, train

    card = read_card(out)
    say(f"reading the base model {cfg.model_path.name}")
    base = base_folder(cfg.model_path, out)
    model, tokenizer, history = train(out, base, settings.hyperparameters, resume=resume, progress=progress)
    say("converting the candidate to GGUF")
    if settings.output == "adapter":
        candidate = convert_adapter(tools, save_adapter(model, out), base, out)
        del model
        gc.collect()
        check_loads(cfg.model_path, candidate)
    else:
        candidate = convert_merged(tools, save_merged(model, tokenizer, out), out)
        del model
        gc.collect()
        check_loads(candidate, None)
    card |= {
        "status": "trained",
        "hyperparameters": settings.describe(),  # a resumed run may have raised the epochs
        "candidate": {"kind": settings.output, "file": candidate.name, "sha256": sha256_of(candidate)},
        "training": history,
    }
    write_card(card, out)
    return card


def evaluate_candidate(
    cfg: Config, out: Path, *, max_calls: int | None = None, judge: tuple[str, str] | None = None
) -> dict[str, Any]:
    """Fills the card's evaluation (status `evaluated`); returns the card. `judge`: the
    judge model's URL and name, when the simulated calls are also judged."""
    from router.tune.evaluate import evaluate

    card = read_card(out)
    candidate = out / card["candidate"]["file"]
    if card["candidate"]["kind"] == "adapter":
        model, adapter = cfg.model_path, candidate
    else:
        model, adapter = candidate, None
    evaluation = asyncio.run(evaluate(cfg, out, model, adapter, max_calls=max_calls, judge=judge))
    card |= {"status": "evaluated", "evaluation": evaluation}
    write_card(card, out)
    return card


def read_card(out: Path) -> dict[str, Any]:
    card: dict[str, Any] = json.loads((out / CARD_JSON).read_text(encoding="utf-8"))
    return card
