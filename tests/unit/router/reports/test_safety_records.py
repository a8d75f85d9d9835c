"""The verdict in records, `_meta.simroute`, and `simroute explain`'s call format."""

from __future__ import annotations

import pytest

from calls import Call, Decision, Observation, Provenance, Route
from records.record import Record
from router.config import parse_config
from router.engine.tool_catalog import ToolCatalog
from router.mcp.results import simroute_meta
from router.reports.explain import CallFormatError, Explainer, call_from_json


def record(decision):
    return Record(
        Call("mcp", "git", "git_reset", {"repo_path": "."}, "s"),
        decision,
        Observation([], Provenance.SIM),
        step=0,
        call_key="k",
    )


def test_records_and_meta_carry_the_verdict():
    decision = Decision(
        Route.SIM,
        "rehearsal",
        "rehearsal diverts destructive mcp calls",
        safety="destructive",
        safety_reason="tool name 'git_reset' says 'reset'",
    )
    row = record(decision).to_json()
    assert (row["safety_class"], row["safety_reason"]) == ("destructive", "tool name 'git_reset' says 'reset'")
    assert Record.from_json(row).decision == decision
    meta = simroute_meta(record(decision))
    assert (meta["safety_class"], meta["safety_reason"], meta["policy"]) == (
        "destructive",
        "tool name 'git_reset' says 'reset'",
        "rehearsal",
    )
    legacy = {k: v for k, v in row.items() if not k.startswith("safety")}  # records written before the gate
    assert Record.from_json(legacy).decision.safety is None


CONFIG = parse_config("mcpServers:\n  git: {command: uvx, args: [mcp-server-git]}\n")


def test_explain_call_format_and_defaults():
    assert (
        call_from_json({"channel": "shell", "name": "shell_exec", "arguments": {"command": "ls"}}, CONFIG).server
        == "shell"
    )
    assert call_from_json({"channel": "browser", "tool": "browser_snapshot"}, CONFIG).server == "browser"
    assert call_from_json({"name": "git_status"}, CONFIG) == Call("mcp", "git", "git_status", {}, "explain")
    http = call_from_json(
        {
            "channel": "http",
            "name": "post https://API.example.com:443/v1/charges?b=2&a=1",
            "arguments": {"body": {"amount": 5}},
        },
        CONFIG,
    )
    assert (http.server, http.tool) == ("api.example.com", "POST")
    assert http.arguments["path"] == "/v1/charges" and http.arguments["query"] == {"a": "1", "b": "2"}
    assert http.arguments["body"] == {"amount": 5} and http.arguments["headers"] == {"content-type": "application/json"}
    explicit = call_from_json(
        {"channel": "http", "arguments": {"method": "DELETE", "url": "http://127.0.0.1:9/x"}}, CONFIG
    )
    assert (explicit.server, explicit.tool) == ("127.0.0.1:9", "DELETE")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "must be a JSON object"),
        ({"channel": "ftp", "name": "x"}, "channel must be"),
        ({"channel": "mcp"}, r"name \(or tool\) is required"),
        ({"channel": "http", "name": "GET /relative"}, "needs a URL"),
        ({"channel": "http", "name": "GET https://a.example/", "server": "b.example"}, "does not match"),
        ({"name": "x", "argumnts": {}}, "unknown key 'argumnts'"),
    ],
)
def test_explain_rejects_malformed_calls(data, message):
    with pytest.raises(CallFormatError, match=message):
        call_from_json(data, CONFIG)
    two = parse_config("mcpServers:\n  a: {command: x}\n  b: {command: y}\n")
    with pytest.raises(CallFormatError, match="server is required"):
        call_from_json({"name": "t"}, two)


def test_explain_reads_annotations_from_the_catalog():
    catalog = ToolCatalog()
    catalog.update("git", [{"name": "git_gc", "annotations": {"destructiveHint": True}}])
    result = Explainer(CONFIG, catalog=catalog).explain(call_from_json({"name": "git_gc"}, CONFIG))
    assert result["safety_class"] == "destructive" and "destructiveHint" in result["safety_reason"]
    assert Explainer(CONFIG).explain(call_from_json({"name": "git_gc"}, CONFIG))["safety_class"] == "side_effect"


def test_tool_snapshots_are_read_from_the_store_read_only(tmp_path):
    import json
    import sqlite3

    from router.engine.tool_catalog import read_tool_snapshots

    path = tmp_path / "records.db"
    assert read_tool_snapshots(path) == {}  # no store yet
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE other (x)")
    db.commit()
    assert read_tool_snapshots(path) == {}  # a store without snapshots
    db.execute("CREATE TABLE tool_snapshots (server TEXT PRIMARY KEY, digest TEXT, ts REAL, tools TEXT)")
    db.execute(
        "INSERT INTO tool_snapshots VALUES ('git', 'd', 0, ?)",
        (json.dumps([{"name": "git_gc", "annotations": {"destructiveHint": True}}]),),
    )
    db.commit()
    db.close()
    catalog = ToolCatalog()
    assert catalog.load_store(path) == 1 and catalog.lookup("git", "git_gc")["annotations"] == {"destructiveHint": True}
    assert catalog.lookup("git", "nope") is None and catalog.lookup("other", "git_gc") is None
    path.write_bytes(b"not a database at all, just text" * 10)
    with pytest.raises(OSError, match="tool snapshots"):
        read_tool_snapshots(path)
