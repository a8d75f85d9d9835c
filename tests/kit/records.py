"""Records as the stores hold them, for tests shared by SQLite and Redis: a row written
before observations had a `source` (a literal line, as that code wrote it), a record
whose answers have one, and the check that both come back from a store as written."""

from __future__ import annotations

import json
from typing import Any

from calls import Call, Decision, Observation, Provenance, Route, Source
from records import record_json
from records.record import Record

# A shadowed call's record as simroute wrote it before sources existed (its simulated
# side included): every key in the order `Record.to_json` writes them, compact JSON.
OLD_ROW = (
    '{"id":"00000000000000010123456789abcdef","ts":1800000000.5,"session":"old-a","step":0,"channel":"mcp",'
    '"server":"srv","tool":"get_weather","arguments":{"city":"Oslo"},"call_key":"k-oslo","route":"shadow",'
    '"policy":"mode","reason":"mode shadow","safety_class":"safe","safety_reason":"a read","note":"",'
    '"provenance":"real","latency_ms":12.5,'
    '"observation":{"content":[{"type":"text","text":"Oslo: sunny"}],"structured":null,"is_error":false,'
    '"provenance":"real","latency_s":0.0125},'
    '"shadow":{"content":[{"type":"text","text":"Oslo: rain"}],"structured":null,"is_error":false,'
    '"provenance":"sim","latency_s":0.5},'
    '"divergence":0.6,"divergence_kind":"content","divergence_evidence":null,"status":"complete","occurrence":1,'
    '"replay_key":"k-oslo","key_scheme":"","recording":null,"owner":"","reads_only":true,"ended":1800000001.0}'
)

# A source as a world model's answer carries it, with a key a newer simroute might add.
MODEL_SOURCE = Source(sub="model", model="stub.gguf", extra={"fork": "f-1"})


def sourced_record(*, session: str = "new-a", record_id: str = "00000000000000020123456789abcdef") -> Record:
    """A simulated call's record: its served answer names the model that wrote it."""
    return Record(
        Call("mcp", "srv", "get_weather", {"city": "Lima"}, session),
        Decision(Route.SIM, "mode", "mode sim"),
        Observation([{"type": "text", "text": "Lima: fog"}], Provenance.SIM, latency_s=0.25, source=MODEL_SOURCE),
        step=0,
        call_key="k-lima",
        id=record_id,
        ts=1_800_000_002.0,
    )


async def check_sources_stored(store: Any) -> None:
    """An old row and a sourced record through `store` (opened): the old one reads back
    with no source and serialises to the very line it was; the new one's source is kept,
    in the observation (no column of its own), its unknown key included."""
    old = json.loads(OLD_ROW)
    new = sourced_record()
    await store.upsert([old, new.to_json()])
    stored_old = await store.record(old["id"])
    assert record_json.dumps(stored_old) == OLD_ROW
    loaded_old = Record.from_json(stored_old)
    assert loaded_old.served.source is None and loaded_old.shadow is not None and loaded_old.shadow.source is None
    assert loaded_old.to_line() == OLD_ROW
    stored_new = await store.record(new.id)
    assert stored_new["observation"]["source"] == {"sub": "model", "model": "stub.gguf", "fork": "f-1"}
    assert "source" not in stored_new  # once, in the observation
    assert Record.from_json(stored_new).served.source == MODEL_SOURCE
    [history] = await store.session_records("new-a", before_step=1, limit=5)  # the world model's history reads it too
    assert history.served.source == MODEL_SOURCE


def forked_session(session: str, *, ts: float, fork_id: str = "fork-1a2b") -> list[Record]:
    """A rehearsal session as a shell fork leaves it: a real read, then a destructive
    call run on a fork made for it (the fork's call 1: where the session diverged, with
    what was copied), then a read on the same fork (call 2)."""
    copied = {
        "folders": {"/workspace": 2048, "/tmp": 0},
        "bytes": 2048,
        "archive_bytes": 10240,
        "cwd": "/workspace/data",
        "variables": 7,
    }

    def answer(text: str, call: int | None) -> Observation:
        if call is None:
            return Observation([{"type": "text", "text": text}], Provenance.REAL)
        fork = {
            "id": fork_id,
            "call": call,
            "container": f"simroute-{fork_id}",
            "from": "session sandbox",
            "copied": copied,
            "fork_s": 0.2,
        }
        return Observation([{"type": "text", "text": text}], Provenance.FORK, source=Source(extra={"fork": fork}))

    steps = [
        ("ls", "data\n", None, Route.REAL),
        ("rm -rf data", "", 1, Route.FORK),
        ("ls data", "ls: no such file\n", 2, Route.FORK),
    ]
    return [
        Record(
            Call("shell", "shell", "shell_exec", {"command": command}, session),
            Decision(route, "rehearsal" if route is Route.FORK else "mode", "rehearsal: destructive, run on a fork"),
            answer(text, call),
            step=step,
            call_key=f"k-{step}",
            id=f"{int((ts + step) * 1e9):016x}{step:016x}",
            ts=ts + step,
        )
        for step, (command, text, call, route) in enumerate(steps)
    ]
