"""Adoption across replicas as a deployment runs it: two `simroute serve` replicas on one
real Redis store, the bundled model simulating an MCP tool. `simroute tune RUN --adopt`
(with replica a's config) stores the adapter in Redis and announces it; both replicas
write its bytes to their own cache and answer with it, without a restart; `--revert`
(with replica b's config) swaps both back and marks the run's card. Which model
answered is read from each answer's `_meta.simroute.source`."""

from __future__ import annotations

import asyncio
import json

import pytest
from kit.launch import model_path, toolbox_server
from kit.replicas import two_replicas
from kit.tune_run import an_evaluated_run, answered_by, simroute_tune, until_answered_by

pytestmark = pytest.mark.integration


async def test_both_replicas_swap_to_an_adoption_and_back(tmp_path, redis_server):
    run = an_evaluated_run(tmp_path / "run")
    world_model = {"model_path": str(model_path()), "max_tokens": 8, "deadline_s": 120, "temperature": 0}
    sections = {"mcpServers": {"toolbox": toolbox_server()}, "mode": "sim", "world_model": world_model}
    base = model_path().name
    with two_replicas(tmp_path, redis_server.url, **sections) as (a, b):
        assert [await answered_by(a.port), await answered_by(b.port)] == [base, base]
        adopted = await asyncio.to_thread(
            simroute_tune, str(run), "--adopt", "--config", str(tmp_path / "a" / "simroute.yaml")
        )
        assert adopted.returncode == 0 and "on redis" in adopted.stderr, adopted.stderr
        card = json.loads((run / "card.json").read_text())
        adapter_name = f"adapter-{card['candidate']['sha256'][:12]}.gguf"
        with_adapter = f"{base}+{adapter_name}"
        assert [await until_answered_by(a.port, with_adapter), await until_answered_by(b.port, with_adapter)] == [
            with_adapter,
            with_adapter,
        ]
        for replica in ("a", "b"):  # each loaded the bytes from Redis into its own cache
            cached = list((tmp_path / replica).rglob(adapter_name))
            assert [path.read_bytes() for path in cached] == [(run / "adapter.gguf").read_bytes()], cached
        reverted = await asyncio.to_thread(simroute_tune, "--revert", "--config", str(tmp_path / "b" / "simroute.yaml"))
        assert reverted.returncode == 0, reverted.stderr
        assert [await until_answered_by(a.port, base), await until_answered_by(b.port, base)] == [base, base]
    assert json.loads((run / "card.json").read_text())["status"] == "reverted"
