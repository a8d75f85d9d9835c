"""The training data of a tuning run: `train.jsonl` and `test.jsonl` in the run's folder,
lines of the export's `messages` format (records/export/formats.py), whose last message
is the target: the real observation as the in-process model runner generates it, after its
prefilled marker, which the live parser reads back. Sessions stay whole on one side.

Either exported from the store with the live prompts (the code `simroute export` runs),
or taken from a `simroute export` folder made for the same model runner. Beside them,
`dataset.json`: the export's card, its files named as the run's folder holds them."""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from records.export.options import ExportFilter, ExportPlan, SessionSplit
from records.export.run import card, export
from records.store.protocol import RecordStore
from router.config import Config
from router.runtime.simulated_side import observation_prefill
from router.runtime.training_prompts import LivePrompts
from router.tune.settings import DataSettings

FORMAT = "messages"  # the chat layout fine-tuning stacks read; the target last
SIDES = ("train", "test")


class TrainingDataError(ValueError):
    """The training data cannot be made from what was given (said to the user as is)."""


async def export_training_data(
    cfg: Config, store: RecordStore, settings: DataSettings, out: Path, *, progress: Callable[[int], None]
) -> dict[str, Any]:
    """The store's records as the run's training data under `out`; returns the dataset card."""
    plan = ExportPlan(
        formats=(FORMAT,),
        filter=ExportFilter(min_divergence=settings.min_divergence),
        split=SessionSplit(test_fraction=settings.test_fraction, seed=settings.seed),
        hardest_first=settings.hardest_first,
    )
    builder = LivePrompts.for_plan(cfg, store, plan)
    counts = await export(store, builder, plan, out, progress=progress)
    dataset = card(
        counts,
        plan,
        source=cfg.store_location.public_source(),
        version=simroute_version(),
        created=now(),
        generation=builder.generation,
    )
    for side in SIDES:
        (out / f"{side}.jsonl").unlink(missing_ok=True)  # a split without lines leaves no file
        exported = out / FORMAT / f"{side}.jsonl"
        if exported.exists():
            exported.replace(out / f"{side}.jsonl")
    if (out / FORMAT).is_dir():
        (out / FORMAT).rmdir()
    return _written(dataset, out)


def copy_training_data(cfg: Config, export_folder: Path, out: Path) -> dict[str, Any]:
    """The `messages` lines of a `simroute export` folder as the run's training data."""
    try:
        dataset = json.loads((export_folder / "dataset.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TrainingDataError(f"{export_folder} holds no `simroute export` dataset (dataset.json): {exc}") from exc
    files = (dataset.get("files") or {}).get(FORMAT) or {}
    if not files.get("train"):
        raise TrainingDataError(f"{export_folder} has no {FORMAT}/train.jsonl (export it with --format {FORMAT})")
    prefill = (dataset.get("generation") or {}).get("prefill", "")
    if prefill != observation_prefill(cfg):
        raise TrainingDataError(
            f"{export_folder}'s targets follow the prefill {prefill!r}, the configured model runner's is "
            f"{observation_prefill(cfg)!r}: export again with this config"
        )
    out.mkdir(parents=True, exist_ok=True)
    for side in SIDES:
        (out / f"{side}.jsonl").unlink(missing_ok=True)
        if files.get(side):
            shutil.copyfile(export_folder / files[side], out / f"{side}.jsonl")
    return _written({**dataset, "copied_from": str(export_folder)}, out)


def _written(dataset: dict[str, Any], out: Path) -> dict[str, Any]:
    lines = dataset["counts"]["lines"][FORMAT]
    dataset = {
        **dataset,
        "formats": [FORMAT],
        "files": {side: f"{side}.jsonl" if lines[side] else None for side in SIDES},
    }
    (out / "dataset.json").write_text(json.dumps(dataset, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if not lines["train"]:
        raise TrainingDataError(
            "no training example: the records hold no real observation of a simulated channel "
            "on the train side (see dataset.json's counts)"
        )
    return dataset


def simroute_version() -> str:
    try:
        return importlib.metadata.version("simroute")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
