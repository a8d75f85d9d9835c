"""The safety corpus (tests/safety/corpus.yaml) through `simroute explain --calls`,
run as a user runs it: destructive calls are never classed safe and never routed
real in rehearsal; benign calls are classed destructive at most 5% of the time."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from kit.launch import simroute_executable

CORPUS = Path(__file__).resolve().parents[2] / "safety" / "corpus.yaml"

# Tool definitions as an MCP listing leaves them in the store: annotations are read from here.
SNAPSHOTS = {
    "untrusted": [
        {
            "name": "get_weather",
            "description": "Weather for a city",
            "annotations": {"readOnlyHint": False, "destructiveHint": True},
        },
        {"name": "helper", "description": "Does things", "annotations": {"readOnlyHint": False}},
    ],
    "files": [
        {"name": "read_file", "description": "Read a file", "annotations": {"readOnlyHint": True}},
        {
            "name": "delete_file",
            "description": "Delete a file",
            "annotations": {"readOnlyHint": False, "destructiveHint": True},
        },
        {"name": "list_directory", "annotations": {"readOnlyHint": True}},
    ],
    "time": [
        {
            "name": "get_current_time",
            "description": "Get current time in a specific timezone",
            "annotations": {"readOnlyHint": True},
        }
    ],
}


def corpus_calls() -> tuple[list[dict], list[dict]]:
    data = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))

    def shell(command: str) -> dict:
        return {"channel": "shell", "name": "shell_exec", "arguments": {"command": command}}

    destructive = [shell(c) for c in data["shell"]["destructive"]] + data["other"]["destructive"]
    benign = [shell(c) for c in data["shell"]["benign"]] + data["other"]["benign"]
    return destructive, benign


def write_store(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE tool_snapshots (server TEXT PRIMARY KEY, digest TEXT, ts REAL, tools TEXT)")
    for server, tools in SNAPSHOTS.items():
        db.execute("INSERT INTO tool_snapshots VALUES (?,?,?,?)", (server, "d", time.time(), json.dumps(tools)))
    db.commit()
    db.close()


def explain(tmp_path: Path, config_text: str, calls: list[dict]) -> list[dict]:
    config = tmp_path / "simroute.yaml"
    config.write_text(config_text + "\nstore:\n  path: records.db\n", encoding="utf-8")
    write_store(tmp_path / "records.db")
    lines = tmp_path / "calls.jsonl"
    lines.write_text("".join(json.dumps(c) + "\n" for c in calls), encoding="utf-8")
    out = subprocess.run(
        [simroute_executable(), "explain", "--config", str(config), "--calls", str(lines)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    results = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(results) == len(calls)
    return results


def test_the_corpus_is_big_enough():
    destructive, benign = corpus_calls()
    shell = [c for c in destructive + benign if c["channel"] == "shell"]
    other = [c for c in destructive + benign if c["channel"] != "shell"]
    assert len(shell) >= 150 and len(other) >= 40
    assert {c["channel"] for c in other} == {"http", "mcp", "browser"}
    assert all(isinstance(c["arguments"]["command"], str) for c in shell)  # no YAML surprises


def test_destructive_calls_are_never_safe_and_never_real_in_rehearsal(tmp_path: Path):
    destructive, _ = corpus_calls()
    results = explain(tmp_path, "mode: rehearsal\nsafety:\n  trusted_servers: [files]\n", destructive)
    classed_safe = [
        (c, r["safety_reason"]) for c, r in zip(destructive, results, strict=False) if r["safety_class"] == "safe"
    ]
    assert not classed_safe, classed_safe
    went_real = [
        (c, r) for c, r in zip(destructive, results, strict=False) if r["route"] in ("real", "shadow", "replay")
    ]
    assert not went_real, went_real
    assert all(r["policy"] == "rehearsal" for r in results)
    # most are destructive, not merely side effects (the browser's clicks are side effects off sensitive domains)
    shell = [r for c, r in zip(destructive, results, strict=False) if c["channel"] == "shell"]
    assert sum(r["safety_class"] == "destructive" for r in shell) / len(shell) >= 0.95


def test_destructive_calls_diverted_to_a_fork_stay_off_real(tmp_path: Path):
    destructive, _ = corpus_calls()
    results = explain(
        tmp_path, "mode: rehearsal\nrehearsal:\n  on_divert: fork\nsafety:\n  trusted_servers: [files]\n", destructive
    )
    went_real = [
        (c, r) for c, r in zip(destructive, results, strict=False) if r["route"] in ("real", "shadow", "replay")
    ]
    assert not went_real, went_real
    # The shell forks (a throwaway copy of the sandbox); the channels that cannot fork are simulated.
    assert {r["route"] for c, r in zip(destructive, results, strict=False) if c["channel"] == "shell"} == {"fork"}
    assert {r["route"] for c, r in zip(destructive, results, strict=False) if c["channel"] != "shell"} == {"sim"}


def test_benign_calls_are_rarely_classed_destructive(tmp_path: Path):
    _, benign = corpus_calls()
    results = explain(tmp_path, "mode: real\nsafety:\n  trusted_servers: [files]\n", benign)
    destructive = [
        (c, r["safety_reason"]) for c, r in zip(benign, results, strict=False) if r["safety_class"] == "destructive"
    ]
    assert len(destructive) / len(benign) <= 0.05, destructive
    # outside rehearsal, the class does not change the route
    assert all(r["route"] == "real" and r["policy"] == "mode" for r in results)


def test_benign_shell_reads_run_real_in_rehearsal(tmp_path: Path):
    """Rehearsal diverts only what it must: on the shell channel, reads and ordinary writes stay real."""
    calls = [
        {"channel": "shell", "name": "shell_exec", "arguments": {"command": c}}
        for c in ("ls -la", "git status", "mkdir -p build", "echo hi > out.txt")
    ]
    results = explain(tmp_path, "mode: rehearsal\n", calls)
    assert [r["route"] for r in results] == ["real"] * 4
    assert [r["safety_class"] for r in results] == ["safe", "safe", "side_effect", "side_effect"]


@pytest.mark.parametrize("on_divert", ["sim", "deny"])
def test_explain_names_the_rule_and_gate(tmp_path: Path, on_divert: str):
    config = f"""
mode: rehearsal
rehearsal:
  on_divert: {on_divert}
  allow:
    - name: build-dir
      match: {{channel: shell, command: "rm -rf build*"}}
      route: real
rules:
  - name: stripe-sim
    match: {{host: api.stripe.com, method: GET}}
    route: sim
"""
    calls = [
        {"channel": "shell", "name": "shell_exec", "arguments": {"command": "rm -rf build/"}},
        {"channel": "shell", "name": "shell_exec", "arguments": {"command": "cd app && rm -rf /var/lib/app"}},
        {"channel": "http", "name": "GET https://api.stripe.com:443/v1/charges"},
    ]
    allowed, diverted, ruled = explain(tmp_path, config, calls)
    assert (allowed["route"], allowed["policy"], allowed["safety_class"]) == (
        "real",
        "rehearsal.allow:build-dir",
        "destructive",
    )
    assert allowed["rules_tried"] == [{"rule": "rehearsal.allow:build-dir", "route": "real", "matched": True}]
    assert (diverted["route"], diverted["policy"]) == (on_divert, "rehearsal")
    assert "destructive" in diverted["reason"] and "recursive delete" in diverted["reason"]
    assert diverted["rules_tried"] == [{"rule": "rehearsal.allow:build-dir", "route": "real", "matched": False}]
    assert (ruled["route"], ruled["policy"], ruled["safety_class"]) == ("sim", "rules:stripe-sim", "safe")
    assert [t["matched"] for t in ruled["rules_tried"]] == [False, True]


def test_explain_reports_bad_calls_and_bad_configs(tmp_path: Path):
    config = tmp_path / "simroute.yaml"
    config.write_text("rules:\n  - match: {command: 're:('}\n    route: sim\n", encoding="utf-8")
    out = subprocess.run(
        [simroute_executable(), "explain", "--config", str(config), "--call", "{}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "simroute.yaml:2: rules[0].match.command: invalid regular expression" in out.stderr
    config.write_text("mode: real\n", encoding="utf-8")
    out = subprocess.run(
        [simroute_executable(), "explain", "--config", str(config), "--call", '{"channel": "http", "name": "GET"}'],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "needs a URL" in json.loads(out.stdout)["error"]


def test_explain_starts_nothing(tmp_path: Path):
    """Upstreams are not started to explain a call: one that cannot run does not stop
    explain, and one that would leave a file behind when started leaves none. Nor are
    the sandbox, the browser or the model: their image and file do not exist here."""
    started = tmp_path / "started"
    config = f"""
mode: rehearsal
world_model: {{model_path: /nonexistent/model.gguf}}
shell: {{image: "simroute-missing:sandbox"}}
browser: {{isolation: container, image: "simroute-missing:browser"}}
mcpServers:
  broken: {{command: /nonexistent/binary}}
  marker: {{command: /bin/sh, args: ["-c", "touch {started}; sleep 30"]}}
"""
    calls = [
        {"server": "broken", "name": "delete_everything"},
        {"server": "marker", "name": "get_status"},
        {"channel": "shell", "name": "shell_exec", "arguments": {"command": "rm -rf /srv"}},
        {"channel": "browser", "name": "browser_navigate", "arguments": {"url": "https://example.com/"}},
    ]
    broken, marker, shell, browser = explain(tmp_path, config, calls)
    assert browser["route"] == "real" and "error" not in browser  # decided without a browser
    assert (broken["route"], broken["policy"], broken["safety_class"]) == ("sim", "rehearsal", "destructive")
    assert (marker["route"], marker["safety_class"]) == ("real", "safe")
    assert (shell["route"], shell["policy"]) == ("sim", "rehearsal")
    time.sleep(0.5)  # a process started in the background would have touched the file by now
    assert not started.exists()
