"""`simroute export --hardest-first`, run as a user runs it, from a real SQLite file and
a real redis-server holding the same records: each file's lines by divergence, the
largest first and those without one last; every line still in its session's split;
the same lines as without the option; the filters still applied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kit.export import export_dataset, lines, synthetic_rows
from kit.launch import write_config
from kit.redis import RedisServer

from records.export.options import SessionSplit
from records.store.redis.store import RedisStore
from records.store.sqlite.store import SQLiteStore

pytestmark = pytest.mark.integration

ROWS = synthetic_rows(0, 300)  # 30 sessions of ten calls, every fifth call shadowed
FILES = [f"{name}/{side}.jsonl" for name in ("agentworldbench", "messages", "preference") for side in ("train", "test")]
SPLIT = SessionSplit(test_fraction=0.3, seed=4)


async def configs(tmp_path: Path, server: RedisServer) -> dict[str, Path]:
    """The same records and tool list in both stores; a config reading each."""
    sqlite, redis = SQLiteStore(tmp_path / "records.db"), RedisStore(server.url)
    for store in (sqlite, redis):
        await store.open()
        await store.upsert(ROWS)
        await store.save_tool_snapshot("weather", [{"name": "forecast", "description": "A forecast."}])
        await store.aclose()
    sections = {"sqlite": {"path": str(tmp_path / "records.db")}, "redis": {"url": server.url}}
    out = {}
    for kind, section in sections.items():
        (tmp_path / kind).mkdir()
        out[kind] = write_config(tmp_path / kind, store=section)
    return out


def divergences(path: Path) -> list[float | None]:
    return [line["meta"]["divergence"] for line in lines(path)]


def hardest_first(values: list[float | None]) -> list[float | None]:
    return sorted(values, key=lambda value: (value is None, -(value or 0.0)))


async def test_each_file_is_ordered_hardest_first_on_both_stores_within_its_sessions_split(tmp_path, redis_server):
    split = ["--test-fraction", str(SPLIT.test_fraction), "--seed", str(SPLIT.seed)]
    orders = {}
    for kind, config in (await configs(tmp_path, redis_server)).items():
        card = export_dataset(config, tmp_path / f"hard-{kind}", "--hardest-first", *split)
        plain = export_dataset(config, tmp_path / f"plain-{kind}", *split)
        assert (
            card["source"]["store"] == kind
            and card["order"]["by"] == "divergence"
            and plain["order"]["by"] == "session"
        )
        assert card["counts"] == plain["counts"]
        for relative in FILES:
            hard, unordered = tmp_path / f"hard-{kind}" / relative, tmp_path / f"plain-{kind}" / relative
            found = divergences(hard)
            assert found and found == hardest_first(found), (kind, relative, found)
            if not relative.startswith("preference"):  # a preference pair always has a divergence
                assert found[-1] is None and found[0] is not None
            # Still in its session's split: the order changes the files' order, not their lines.
            side = relative.split("/")[1].removesuffix(".jsonl")
            assert {SPLIT.side(line["meta"]["session"]) for line in lines(hard)} == {side}
            assert sorted(hard.read_text().splitlines()) == sorted(unordered.read_text().splitlines())
            orders[kind, relative] = found
        assert (
            len({value for value in orders[kind, "messages/train.jsonl"] if value is not None}) > 5
        )  # a real order to keep
    for relative in FILES:
        # Ties are in session order, which Redis lists in no particular order: the divergences
        # are in the same order from both stores, the tied lines maybe not.
        assert orders["sqlite", relative] == orders["redis", relative]


async def test_filters_still_apply_when_ordered_on_both_stores(tmp_path, redis_server):
    wanted = sorted(
        (row["divergence"] for row in ROWS if row["tool"] == "forecast" and (row["divergence"] or 0.0) >= 0.5),
        reverse=True,
    )
    assert len(wanted) > 5
    for kind, config in (await configs(tmp_path, redis_server)).items():
        out = tmp_path / f"out-{kind}"
        card = export_dataset(
            config,
            out,
            "--hardest-first",
            "--min-divergence",
            "0.5",
            "--tool",
            "weather.forecast",
            "--test-fraction",
            "0",
        )
        assert card["filters"]["min_divergence"] == 0.5 and card["filters"]["tool"] == "forecast"
        exported = [line["meta"] for line in lines(out / "messages" / "train.jsonl")]
        assert [meta["divergence"] for meta in exported] == wanted, kind
        assert {meta["tool"] for meta in exported} == {"forecast"}
        # A pair needs its sides to differ beyond the threshold: strictly above it.
        pairs = [line["meta"]["divergence"] for line in lines(out / "preference" / "train.jsonl")]
        assert pairs == [value for value in wanted if value > 0.5] and len(pairs) > 5
        assert json.loads((out / "dataset.json").read_text())["order"]["direction"] == "descending"
