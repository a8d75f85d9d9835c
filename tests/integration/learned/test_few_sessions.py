"""The learned router after a few sessions, on the project's own workload servers
(benchmarks/servers/, not the fixtures it was tuned on): three real sessions each
call the ticket counter's `next_ticket` (a write), `current_ticket` and
`server_version`, a fetch of the same local page and `convert_time`. A fresh
`mode: learned` session, learning frozen and no exploration, then serves the
constant `server_version` and the repeated fetch from the recordings, even after its
own `next_ticket` ran real, while the counter's own read stays real; and
`simroute eval` predicts, for that session, the share the router delivered."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from kit.launch import meta_of, simroute_executable, write_config
from kit.workload import PAGE_TEXT, World, run_session, served_page, session_records, sessions_of

pytestmark = pytest.mark.integration

LEARNING_SESSIONS = 3
CONVERT = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
LEARNED = {"explore_rate": 0, "freeze": True}
VERSION = "ticket-counter 3.2.0 (build 5120, json-file backend)"  # benchmarks/servers/ticket_counter.py


def eval_json(config: Path, session: str) -> subprocess.CompletedProcess:
    command = [simroute_executable(), "eval", "--config", str(config), "--session", session, "--json"]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
async def few_sessions(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("few-sessions")
    learning_folder, real_folder = folder / "learning", folder / "real"
    learning_folder.mkdir()
    real_folder.mkdir()
    with served_page(folder) as url:
        world = World(folder / "world", url)
        sections = {"mcpServers": world.servers("tickets", "pages", "time"), "store": {"path": ".simroute/records.db"}}
        learning = [
            ("tickets_next_ticket", {}),
            ("tickets_current_ticket", {}),
            ("tickets_server_version", {}),
            ("pages_fetch", {"url": url}),
            ("time_convert_time", CONVERT),
        ]
        real = write_config(learning_folder, mode="real", **sections)
        for _ in range(LEARNING_SESSIONS):
            await run_session(real, learning)
        # A copy of the store as the fresh session finds it: the same calls run there for
        # real give eval the real answers to decide that workload against.
        shutil.copytree(learning_folder / ".simroute", real_folder / ".simroute")
        learned = write_config(learning_folder, mode="learned", learned=LEARNED, **sections)
        calls = ["tickets_next_ticket", "tickets_server_version", "pages_fetch", "tickets_current_ticket"]
        workload = [(name, {"url": url} if name == "pages_fetch" else {}) for name in calls]
        answers = await run_session(learned, workload)
        tickets = world.tickets_issued()
        again = write_config(real_folder, mode="real", **sections)
        await run_session(again, workload)
    session, real_session = sessions_of(learned)[-1], sessions_of(again)[-1]
    predicting = real_folder / "predict.yaml"  # the learned config over the copy's store
    predicting.write_text(learned.read_text())
    return {
        "answers": dict(zip(calls, answers, strict=True)),
        "records": session_records(learned, session),
        "sessions": sessions_of(learned),
        "eval": eval_json(learned, session),
        "eval_of_real_run": eval_json(predicting, real_session),
        "tickets": tickets,
    }


def text_of(answer) -> str:
    return "\n".join(block.text for block in answer.content)


async def test_the_fresh_session_is_a_new_one_after_three_learning_sessions(few_sessions):
    assert len(few_sessions["sessions"]) == LEARNING_SESSIONS + 1
    assert [r["tool"] for r in few_sessions["records"]] == ["next_ticket", "server_version", "fetch", "current_ticket"]


async def test_the_constant_tool_and_the_repeated_read_replay_after_a_write(few_sessions):
    answers = few_sessions["answers"]
    for name, text in (("tickets_server_version", VERSION), ("pages_fetch", PAGE_TEXT)):
        meta = meta_of(answers[name])
        assert (meta["route"], meta["provenance"]) == ("replay", "replay"), (name, meta)
        assert text_of(answers[name]) == text
    by_tool = {r["tool"]: r for r in few_sessions["records"]}
    assert by_tool["server_version"]["provenance"] == by_tool["fetch"]["provenance"] == "replay"


async def test_the_counter_stays_real(few_sessions):
    answers = few_sessions["answers"]
    assert few_sessions["tickets"] == LEARNING_SESSIONS + 1  # the fresh session's next_ticket reached the counter
    for name in ("tickets_next_ticket", "tickets_current_ticket"):
        assert meta_of(answers[name])["provenance"] == "real", (name, meta_of(answers[name]))
    assert text_of(answers["tickets_next_ticket"]) == f"ticket {LEARNING_SESSIONS + 1}"
    assert text_of(answers["tickets_current_ticket"]) == f"current ticket {LEARNING_SESSIONS + 1}"


def live_share(records: list[dict]) -> float:
    return sum(r["provenance"] in ("sim", "replay") for r in records) / len(records)


async def test_eval_of_the_session_predicts_the_share_the_router_delivered(few_sessions):
    evaluated = few_sessions["eval"]
    assert evaluated.returncode == 0, evaluated.stderr
    report = json.loads(evaluated.stdout)
    records = few_sessions["records"]
    assert live_share(records) == pytest.approx(0.5)
    assert report["calls"] == len(records)
    assert report["off_real_share"] == pytest.approx(live_share(records))


async def test_eval_of_the_same_calls_run_real_predicts_the_share_the_router_delivered(few_sessions):
    """The same workload run real on a copy of the store the fresh session started from:
    every call has a real answer, and the frozen state decides it as the router did."""
    evaluated = few_sessions["eval_of_real_run"]
    assert evaluated.returncode == 0, evaluated.stderr
    report = json.loads(evaluated.stdout)
    assert report["calls"] == len(few_sessions["records"])
    assert report["off_real_share"] == pytest.approx(live_share(few_sessions["records"]))
