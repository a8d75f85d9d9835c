"""Tuning runs written as `simroute tune` leaves them once evaluated (a model card with
figures, a candidate), for the adoption tests: no training stack needed; and the model
a serving router's simulated answer names."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from router.tune.card import model_card, sha256_of, write_card
from router.tune.settings import DataSettings, Hyperparameters, TuneSettings

DATASET = {
    "source": {"kind": "sqlite", "path": "records.db"},
    "files": {"train": "train.jsonl", "test": "test.jsonl"},
    "filters": {},
    "order": {"by": "session"},
    "generation": {"prefill": "**Environment Observation:**\n", "target": "the observation, after the prefill"},
    "split": {"by": "session", "seed": 0, "test_fraction": 0.1, "sessions": {"train": 9, "test": 1}},
    "counts": {
        "records_read": 100,
        "lines": {"messages": {"train": 90, "test": 10}},
        "examples_by_domain": {"MCP": 100},
        "duplicates_collapsed": 0,
    },
}


def evaluated_card(
    *,
    base: float | None = 0.40,
    candidate: float | None = 0.50,
    well_formed_base: float | None = 0.9,
    well_formed_candidate: float | None = 0.9,
    base_model: Path = Path("base.gguf"),
) -> dict[str, Any]:
    """A card with status `evaluated` and these held-out figures (world-state layer off)."""
    settings = TuneSettings(DataSettings(), Hyperparameters())
    card = model_card(dataset=DATASET, settings=settings, base_model=base_model, version="0.1.0", created="now")
    off = card["evaluation"]["state_layer_off"]
    off["fidelity"] = {"base": base, "candidate": candidate}
    off["well_formed_rate"] = {"base": well_formed_base, "candidate": well_formed_candidate}
    card["status"] = "evaluated"
    return card


def evaluated_run(folder: Path, candidate: Path, base_model: Path, **figures: float) -> Path:
    """`folder` holding an evaluated run whose candidate (an adapter of `base_model`) is `candidate`."""
    card = evaluated_card(base_model=base_model, **figures)
    card["candidate"] = {"kind": "adapter", "file": candidate.name, "sha256": sha256_of(candidate)}
    write_card(card, folder)
    return folder


def simroute_tune(*args: str, timeout: float = 300, env: dict[str, str] | None = None):
    """`simroute tune ARGS` as a user runs it (a subprocess), its output kept."""
    import subprocess

    from kit.launch import simroute_executable

    return subprocess.run(
        [simroute_executable(), "tune", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


async def store_config(folder: Path, records: int, model: str) -> Path:
    """A config over a SQLite store filled with `records` weather calls (tests/kit/export.py)
    whose world model is `model` (a path, relative to the folder or absolute)."""
    import json

    from kit.export import fill_store
    from records.store.sqlite.store import SQLiteStore

    store = await SQLiteStore(folder / "records.db").open()
    try:
        await fill_store(store, records)
    finally:
        await store.aclose()
    config = folder / "simroute.yaml"
    config.write_text(json.dumps({"store": {"path": "records.db"}, "world_model": {"model_path": model}}))
    return config


def an_evaluated_run(folder: Path) -> Path:
    """A run folder as `simroute tune` leaves it once evaluated: its card and a zero
    adapter of the bundled model (answers unchanged; the model's name tells the swap)."""
    from kit.launch import model_path
    from kit.lora import write_lora_adapter

    folder.mkdir()
    adapter = write_lora_adapter(model_path(), folder / "adapter.gguf", zero=True)
    return evaluated_run(folder, adapter, model_path())


async def answered_by(port: int) -> str:
    """The model that answered one simulated `echo` call (the toolbox server's tool) at
    the router serving on `port`, from the answer's `_meta.simroute.source`."""
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    from kit.launch import meta_of

    async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp"), timeout=180) as client:
        result = await client.call_tool("echo", {"text": "hello"}, raise_on_error=False)
    assert meta_of(result)["provenance"] == "sim", result
    model: str = meta_of(result)["source"]["model"]
    return model


async def until_answered_by(port: int, wanted: str, *, within_s: float = 30.0) -> str:
    """Calls until one is answered by `wanted` (routers follow an adoption within a
    second, or at once on a Redis announcement); the last model seen."""
    started = time.monotonic()
    while True:
        model = await answered_by(port)
        if model == wanted or time.monotonic() - started > within_s:
            return model
        await asyncio.sleep(0.5)
