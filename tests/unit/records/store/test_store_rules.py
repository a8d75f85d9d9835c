"""The rules both record stores keep, written once (records/store/store_rules.py): the
stores' own tests run them on a real SQLite file and a real Redis server
(test_tool_pin_rows.py, the maintenance tests); these pin the decisions."""

from __future__ import annotations

from records.store.store_rules import ending, interrupt, orphaned, pin_of, prunable, superseded_by


def change(tool: str, digest: str, server: str = "dict") -> dict:
    return {"server": server, "tool": tool, "new_digest": digest, "definition": {"name": tool}, "ts": 1.0}


def test_a_new_change_supersedes_its_tools_pending_ones_and_the_same_one_is_recorded_once():
    pending = {1: change("lookup", "a"), 2: change("define", "b"), 3: change("lookup", "c", server="other")}
    assert superseded_by(change("lookup", "d"), pending) == [1]
    assert superseded_by(change("lookup", "a"), pending) is None  # already pending: not recorded twice
    assert superseded_by(change("spell", "e"), pending) == []


def test_a_person_ends_a_servers_pending_changes_and_accepting_pins_the_new_definition():
    pending = {"f1": change("lookup", "a"), "f2": change("define", "b"), "f3": change("lookup", "c", server="other")}
    assert ending(pending, "dict", None) == ["f1", "f2"]
    assert ending(pending, "dict", ["define"]) == ["f2"]
    assert pin_of(pending["f1"], 9.0) == {
        "server": "dict",
        "tool": "lookup",
        "digest": "a",
        "ts": 9.0,
        "definition": {"name": "lookup"},
    }


def test_a_dead_routers_started_call_is_interrupted_and_says_so():
    assert orphaned(None, lambda owner: True) and orphaned("host:1", lambda owner: False)
    assert not orphaned("host:1", lambda owner: True)
    row = interrupt({"status": "started", "note": "slow"})
    assert row == {"status": "interrupted", "note": "slow; interrupted: its router stopped before the call finished"}


def test_pruning_keeps_named_recordings_and_unfinished_records():
    assert prunable({"status": "done"})
    assert not prunable({"status": "done", "recording": "demo"})
    assert not prunable({"status": "started"}) and not prunable({"status": "pending"})
