"""Adoption as a user runs it: `simroute serve` with the bundled model simulating an MCP
tool; `simroute tune RUN/ --adopt` for an evaluated run (its card and a zero adapter,
written here: no training stack) makes the next simulated call answered by the model
with the adapter, without a restart; `--revert` goes back to the config's own model;
a served world model (engine: openai) refuses adoption. The swap is read from the
model each answer names (its `_meta.simroute.source` and its record), not its text."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest
from kit.launch import model_path, records_of, toolbox_server, write_config
from kit.serve import serving
from kit.tune_run import an_evaluated_run, answered_by, simroute_tune, until_answered_by

pytestmark = pytest.mark.integration


async def test_adopt_swaps_the_running_routers_model_and_revert_goes_back(tmp_path):
    run = an_evaluated_run(tmp_path / "run")
    world_model = {"model_path": str(model_path()), "max_tokens": 8, "deadline_s": 120, "temperature": 0}
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()}, mode="sim", world_model=world_model)
    base = model_path().name
    with serving(config, tmp_path / "serve.log") as port:
        assert await answered_by(port) == base
        adopted = await asyncio.to_thread(simroute_tune, str(run), "--adopt", "--config", str(config))
        assert adopted.returncode == 0 and "status: adopted" in adopted.stderr, adopted.stderr
        card = json.loads((run / "card.json").read_text())
        digest = hashlib.sha256((run / "adapter.gguf").read_bytes()).hexdigest()
        assert card["status"] == "adopted" and card["adoption"]["adopted"] and card["adoption"]["previous"] is None
        with_adapter = f"{base}+adapter-{digest[:12]}.gguf"
        assert await until_answered_by(port, with_adapter) == with_adapter  # no restart
        reverted = await asyncio.to_thread(simroute_tune, "--revert", "--config", str(config))
        assert reverted.returncode == 0 and "the config's own world model" in reverted.stderr, reverted.stderr
        assert await until_answered_by(port, base) == base
        card = json.loads((run / "card.json").read_text())
        assert card["status"] == "reverted" and card["adoption"]["reverted"], card["adoption"]
        assert "reverted:" in (run / "MODEL_CARD.md").read_text()
    models = [r["observation"].get("source", {}).get("model") for r in records_of(config)]
    assert models[0] == base and with_adapter in models and models[-1] == base  # each record names its model
    again = simroute_tune("--revert", "--config", str(config))
    assert again.returncode == 2 and "no adopted world model" in again.stderr


def test_a_served_world_model_refuses_adoption(tmp_path):
    run = an_evaluated_run(tmp_path / "run")
    config = write_config(tmp_path, world_model={"engine": "openai", "url": "http://127.0.0.1:9/v1"})
    done = simroute_tune(str(run), "--adopt", "--config", str(config))
    assert done.returncode == 2, done.stderr
    assert "adoption refused" in done.stderr and "engine: openai" in done.stderr
    assert json.loads((run / "card.json").read_text())["status"] == "evaluated"
