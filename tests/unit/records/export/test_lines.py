"""The order an export's lines reach their files: as read, or hardest first (spooled to
a scratch SQLite file, read back through its index)."""

from __future__ import annotations

import json

from records.export.lines import QUERY, HardestFirst, InSessionOrder

ADDED = [  # (file, divergence, label), in the order the sessions gave them
    ("train", 0.2, "a"),
    ("train", None, "b"),
    ("test", 0.1, "c"),
    ("train", 0.9, "d"),
    ("train", 0.5, "e"),
    ("test", None, "f"),
    ("train", None, "g"),
    ("train", 0.9, "h"),
    ("test", 0.7, "i"),
    ("train", 0.0, "j"),
]


def opened(tmp_path) -> dict:
    return {("messages", side): (tmp_path / f"{side}.jsonl").open("w", encoding="utf-8") for side in ("train", "test")}


def labels(tmp_path, side: str) -> list[str]:
    return [json.loads(line)["label"] for line in (tmp_path / f"{side}.jsonl").read_text(encoding="utf-8").splitlines()]


def written(tmp_path, lines, files) -> None:
    for side, divergence, label in ADDED:
        lines.add("messages", side, divergence, {"label": label})
    lines.finish()
    for file in files.values():
        file.close()


def test_hardest_first_orders_each_file_by_divergence_ties_in_session_order_undiverged_last(tmp_path):
    files = opened(tmp_path)
    spool = HardestFirst(files, tmp_path / "hardest.db")
    written(tmp_path, spool, files)
    assert labels(tmp_path, "train") == [
        "d",
        "h",
        "e",
        "a",
        "j",
        "b",
        "g",
    ]  # 0.9 (d before h), 0.5, 0.2, 0.0, then none
    assert labels(tmp_path, "test") == ["i", "c", "f"]  # every line stays in its own file
    assert not (tmp_path / "hardest.db").exists()  # the spool goes once written


def test_in_session_order_writes_lines_as_they_come(tmp_path):
    files = opened(tmp_path)
    written(tmp_path, InSessionOrder(files), files)
    assert labels(tmp_path, "train") == ["a", "b", "d", "e", "g", "h", "j"]
    assert labels(tmp_path, "test") == ["c", "f", "i"]


def test_the_spool_is_read_through_its_index_without_a_sort_in_memory(tmp_path):
    files = opened(tmp_path)
    spool = HardestFirst(files, tmp_path / "hardest.db")
    spool.db.execute("COMMIT")
    spool.db.execute("CREATE INDEX hardest ON lines (file, undiverged, divergence DESC)")
    plan = " ".join(row[-1] for row in spool.db.execute("EXPLAIN QUERY PLAN " + QUERY, (0,)))
    assert "USING INDEX hardest" in plan and "TEMP B-TREE" not in plan, plan
    spool.close()
    for file in files.values():
        file.close()


def test_a_spool_closed_early_leaves_no_scratch_file(tmp_path):
    files = opened(tmp_path)
    spool = HardestFirst(files, tmp_path / "hardest.db")
    spool.add("messages", "train", 0.3, {"label": "x"})
    spool.close()  # an export that failed half way
    assert not (tmp_path / "hardest.db").exists()
    for file in files.values():
        file.close()
