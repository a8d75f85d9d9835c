"""`simroute train`, `eval`, `reload` and `explain` on a store of generated shadow records."""

from __future__ import annotations

import asyncio
import json

import pytest
from kit.launch import write_config
from kit.learned import generate
from typer.testing import CliRunner

from records.store.sqlite.store import SQLiteStore
from router.cli.main import app


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
    config = write_config(
        folder, mode="learned", learned={"min_labels": 5, "explore_rate": 0}, mcpServers={"srv": {"command": "true"}}
    )
    fill(folder / "records.db", rows)
    out = CliRunner().invoke(app, ["train", "--config", str(config)])
    return folder, config, out


def test_train_prints_metrics_and_saves_model_and_card(trained):
    folder, config, out = trained
    assert out.exit_code == 0, out.output
    assert "cross-validated ROC-AUC" in out.output and "the stored sessions decided again" in out.output
    assert "what the router would deliver" in out.output and "why they stayed real" in out.output
    model = folder / ".simroute" / "router.skops"
    card = json.loads((folder / ".simroute" / "router.card.json").read_text())
    assert model.is_file() and card["routes"]["sim"]["trained"] and card["routes"]["sim"]["cv_roc_auc"] >= 0.85
    # The threshold comes from deciding the stored calls again: the chosen point keeps the
    # target over calls, and the promise is that run's figures (every recorded call counted).
    sim = card["routes"]["sim"]
    chosen = next(p for p in sim["curve"] if p["threshold"] == sim["threshold"])
    promise = card["promise"]
    assert chosen["fidelity"] >= 0.9 and promise["calls"] == 500 and promise["off_real_share"] > 0.2
    assert promise["fidelity"] >= 0.9 and sum(promise["served"].values()) == 500
    assert (
        card["data"]["records"] == 500
        and card["simroute_version"]
        and card["features"]
        and card["data"]["first"] < card["data"]["last"]
    )


def test_explain_shows_the_learned_probabilities(trained):
    folder, config, _ = trained
    call = {"channel": "mcp", "server": "srv", "name": "get_weather", "arguments": {"city": "Oslo"}}
    out = CliRunner().invoke(app, ["explain", "--config", str(config), "--call", json.dumps(call)])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["policy"] == "learned" and "P(ok)=" in result["reason"]
    sim = next(c for c in result["learned"]["candidates"] if c["route"] == "sim")
    assert (
        sim["source"].startswith("model")
        and sim["probability"] > sim["threshold"] == result["learned"]["thresholds"]["sim"]
    )
    bad = dict(call, arguments={"city": "Rome"})
    worse = json.loads(CliRunner().invoke(app, ["explain", "--config", str(config), "--call", json.dumps(bad)]).output)
    assert next(c for c in worse["learned"]["candidates"] if c["route"] == "sim")["probability"] < sim["probability"]


def test_eval_compares_the_model_with_the_rules(trained):
    folder, config, _ = trained
    learned = CliRunner().invoke(app, ["eval", "--config", str(config)])
    assert learned.exit_code == 0, learned.output
    assert "fidelity kept" in learned.output and "model" in learned.output and "why they stayed real" in learned.output
    (folder / "real").mkdir()
    real = write_config(folder / "real", mode="real", store={"path": str(folder / "records.db")})
    baseline = json.loads(CliRunner().invoke(app, ["eval", "--config", str(real), "--json"]).output)
    assert (
        baseline["off_real_share"] == 0
        and baseline["served"] == {"real": 500}
        and baseline["why_real"] == {"decided by mode": 500}
    )
    out = CliRunner().invoke(
        app, ["eval", "--config", str(real), "--model", str(folder / ".simroute" / "router.skops"), "--json"]
    )
    candidate = json.loads(out.output)
    assert candidate["model"] and candidate["off_real_share"] > 0.2 and candidate["calls"] == 500, candidate


def test_eval_of_one_session_decides_only_it_and_refuses_an_unknown_one(trained):
    folder, config, _ = trained
    one = json.loads(CliRunner().invoke(app, ["eval", "--config", str(config), "--session", "s49", "--json"]).output)
    assert one["sessions"] == 1 and one["calls"] == 10
    unknown = CliRunner().invoke(app, ["eval", "--config", str(config), "--session", "nobody"])
    assert unknown.exit_code == 1 and "no records of session nobody" in unknown.output


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
    assert "no classifier" in out.output and "the evidence rule and the per-tool estimates decide" in out.output


def test_reports_off_a_terminal_print_whole_tables_at_any_width(trained):
    # A piped or logged run (CliRunner's output is not a terminal) gets every column whole,
    # whatever width the environment claims: no `fide…`, `shad…`.
    folder, config, out = trained
    evaluated = CliRunner().invoke(app, ["eval", "--config", str(config)], env={"COLUMNS": "80"})
    assert evaluated.exit_code == 0, evaluated.output
    for output in (out.output, evaluated.output):
        assert "…" not in output and "fidelity kept" in output and "cost saved" in output and "replay misses" in output
    assert max(len(line) for line in evaluated.output.splitlines()) > 80  # the table was not squeezed into 80 columns
    assert "\x1b[" not in evaluated.output  # and no terminal colour codes in a log


def test_train_json_prints_the_card_and_where_the_model_went(trained, tmp_path):
    folder, config, _ = trained
    model = tmp_path / "other.skops"
    out = CliRunner().invoke(app, ["train", "--config", str(config), "--model", str(model), "--json"])
    assert out.exit_code == 0, out.output
    [line] = out.stdout.splitlines()  # one JSON object, nothing else on stdout (no tables, no progress)
    report = json.loads(line)
    assert report["model"] == str(model) and model.is_file() and report["data"]["records"] == 500
    assert (
        report["routes"]["sim"]["trained"]
        and report["routes"]["sim"]["threshold"] is not None
        and report["promise"]["calls"] == 500
    )
    assert json.loads((tmp_path / "other.card.json").read_text())["routes"] == report["routes"]


def test_recordings_json_lists_each_named_recording(tmp_path):
    rows = generate(40)
    for row in rows:
        row["recording"] = "golden" if row["session"] in ("s0", "s1") else None
    config = write_config(tmp_path, mode="replay")
    fill(tmp_path / "records.db", rows)
    out = CliRunner().invoke(app, ["recordings", "--config", str(config), "--json"])
    assert out.exit_code == 0, out.output
    [golden] = [json.loads(line) for line in out.stdout.splitlines()]
    assert (
        golden["name"] == "golden"
        and golden["sessions"] == 2
        and golden["records"] == 20
        and golden["first_ts"] <= golden["last_ts"]
    )
