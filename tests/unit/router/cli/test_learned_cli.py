"""`simroute train`, `eval`, `reload` and `explain` on a store of generated shadow records."""

from __future__ import annotations

import asyncio
import json

import pytest
from kit.launch import write_config
from kit.learned import generate
from typer.testing import CliRunner

from router.cli.main import app
from shadow.store.sqlite.store import SQLiteStore


def fill(path, rows) -> None:
    async def run():
        store = await SQLiteStore(path).open()
        await store.upsert(rows)
        await store.aclose()

    asyncio.run(run())


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    rows = generate(500)
    config = write_config(folder, mode="learned", learned={"min_labels": 5, "explore_rate": 0}, mcpServers={"srv": {"command": "true"}})
    fill(folder / "records.db", rows)
    out = CliRunner().invoke(app, ["train", "--config", str(config)])
    return folder, config, out


def test_train_prints_metrics_and_saves_model_and_card(trained):
    folder, config, out = trained
    assert out.exit_code == 0, out.output
    assert "cross-validated ROC-AUC" in out.output and "share vs fidelity" in out.output and "threshold for fidelity 0.9" in out.output
    model = folder / ".simroute" / "router.skops"
    card = json.loads((folder / ".simroute" / "router.card.json").read_text())
    assert model.is_file() and card["routes"]["sim"]["trained"] and card["routes"]["sim"]["cv_roc_auc"] >= 0.85
    assert card["data"]["records"] == 500 and card["simroute_version"] and card["features"] and card["data"]["first"] < card["data"]["last"]


def test_explain_shows_the_learned_probabilities(trained):
    folder, config, _ = trained
    call = {"channel": "mcp", "server": "srv", "name": "get_weather", "arguments": {"city": "Oslo"}}
    out = CliRunner().invoke(app, ["explain", "--config", str(config), "--call", json.dumps(call)])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["policy"] == "learned" and "P(ok)=" in result["reason"]
    sim = next(c for c in result["learned"]["candidates"] if c["route"] == "sim")
    assert sim["source"].startswith("model") and sim["probability"] > sim["threshold"] == result["learned"]["thresholds"]["sim"]
    bad = dict(call, arguments={"city": "Rome"})
    worse = json.loads(CliRunner().invoke(app, ["explain", "--config", str(config), "--call", json.dumps(bad)]).output)
    assert next(c for c in worse["learned"]["candidates"] if c["route"] == "sim")["probability"] < sim["probability"]


def test_eval_compares_the_model_with_the_rules(trained):
    folder, config, _ = trained
    learned = CliRunner().invoke(app, ["eval", "--config", str(config)], env={"COLUMNS": "200"})
    assert learned.exit_code == 0, learned.output
    assert "fidelity kept" in learned.output and "model" in learned.output
    (folder / "real").mkdir()
    real = write_config(folder / "real", mode="real", store={"path": str(folder / "records.db")})
    baseline = CliRunner().invoke(app, ["eval", "--config", str(real)], env={"COLUMNS": "200"})
    assert baseline.exit_code == 0 and "100.0%" in baseline.output  # everything real
    candidate = CliRunner().invoke(
        app, ["eval", "--config", str(real), "--model", str(folder / ".simroute" / "router.skops")], env={"COLUMNS": "200"}
    )
    assert candidate.exit_code == 0 and "(model " in candidate.output and "100.0%" not in candidate.output, candidate.output


def test_reload_touches_the_model_and_refuses_a_broken_one(trained, tmp_path):
    folder, config, _ = trained
    model = folder / ".simroute" / "router.skops"
    before = model.stat().st_mtime_ns
    out = CliRunner().invoke(app, ["reload", "--config", str(config)])
    assert out.exit_code == 0 and "touched" in out.output and model.stat().st_mtime_ns > before
    broken = write_config(tmp_path, mode="learned", learned={"model": str(tmp_path / "bad.skops")})
    (tmp_path / "bad.skops").write_bytes(b"not a model")
    refused = CliRunner().invoke(app, ["reload", "--config", str(broken)])
    assert refused.exit_code == 1 and "not a readable skops file" in refused.output


def test_train_with_one_class_uses_the_per_tool_estimate_and_exits_0(tmp_path):
    rows = [r for r in generate(200) if r["tool"] == "get_motto"]
    for r in rows:
        r["divergence"], r["divergence_kind"] = 0.0, "none"
    config = write_config(tmp_path, mode="learned")
    fill(tmp_path / "records.db", rows)
    out = CliRunner().invoke(app, ["train", "--config", str(config)])
    assert out.exit_code == 0, out.output
    assert "no classifier" in out.output and "per-tool Beta-Binomial estimate decides" in out.output
