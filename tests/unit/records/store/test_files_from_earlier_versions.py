"""Files written by an earlier version of simroute still load: a SQLite record store
and a learned model saved with skops, both made by the code before the rooms
layout (tests/data/*_v0_1.*, gzipped to stay small). A class a saved model names
must stay loadable where the model says it is, and an older store file is opened
(and migrated) in place."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

from calls import Call, Route, Session, tool_key
from policies.learned import LearnedPolicy, LearnedSettings
from policies.learned.persistence import load_model
from policies.safety.verdict import SafetyClass, SafetyVerdict
from records.store.protocol import ReplaySource
from records.store.sqlite.store import SCHEMA_VERSION, SQLiteStore

DATA = Path(__file__).resolve().parents[3] / "data"  # tests/data


def unpacked(name: str, into: Path) -> Path:
    target = into / name.removesuffix(".gz")
    with gzip.open(DATA / name, "rb") as src, target.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return target


async def test_a_store_written_by_the_earlier_layout_opens_and_reads(tmp_path):
    path = unpacked("store_v0_1.sqlite.gz", tmp_path)
    store = await SQLiteStore(path).open()
    try:
        assert await store.count() == 4
        rows = await store.recent()
        assert [row["session"] for row in rows] == ["old-a", "old-a", "old-b", "old-b"]
        assert rows[1]["divergence"] == 0.6 and rows[1]["divergence_kind"] == "content"
        assert [info.name for info in await store.recordings()] == ["golden"]

        oslo = rows[0]["replay_key"]
        assert await store.replay_session(oslo, exclude_session="new", source=ReplaySource()) == "old-b"
        assert await store.replay_session(oslo, exclude_session="new", source=ReplaySource("golden")) == "old-b"
        replayed = await store.replay_row(oslo, session="old-a", occurrence=1)
        assert replayed is not None and replayed.record_id == rows[0]["id"]
        assert replayed.observation.content[0]["text"] == "Oslo: sunny"

        noise = await store.noise_stats(tool_key("mcp", "srv", "get_weather"))
        assert noise.pairs == 2 and noise.disagreements == {"$.content[0].text": 1}
        assert [name for _, name, _ in await store.noise_table()] == ["srv.get_weather"]
        assert store.tool_snapshot("srv") == [{"name": "get_weather", "inputSchema": {"type": "object"}}]

        await store.upsert([{**rows[3], "id": "00000000000000ff", "session": "new", "ts": rows[3]["ts"] + 10}])
        assert await store.count() == 5
    finally:
        await store.aclose()
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        db.close()


def test_a_learned_model_saved_by_the_earlier_layout_loads_and_decides(tmp_path):
    model = load_model(unpacked("learned_v0_1.skops.gz", tmp_path))
    assert set(model.routes) <= {"sim", "replay"} and model.routes
    policy = LearnedPolicy(
        LearnedSettings(min_labels=0, explore_rate=0.0), replay_key_of=lambda call: "recorded", model=model
    )
    safe = SafetyVerdict(SafetyClass.SAFE, "a read")
    call = Call("mcp", "srv", "get_weather", {"city": "Oslo"}, "s")
    assessed = policy.assess(call, Session("s"), safe)
    scored = [candidate for candidate in assessed.candidates if candidate.probability is not None]
    assert scored and all(0.0 <= candidate.probability <= 1.0 for candidate in scored)
    assert all(f"model {model.digest}" in candidate.source for candidate in scored)
    assert policy.decide(call, Session("s"), safe).route in (Route.REAL, Route.SIM, Route.REPLAY, Route.SHADOW)
