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
import subprocess

import pytest
from kit.launch import meta_of, simroute_executable, write_config
from kit.workload import PAGE_TEXT, World, run_session, served_page, session_records, sessions_of

pytestmark = pytest.mark.integration

LEARNING_SESSIONS = 3
CONVERT = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
LEARNED = {"explore_rate": 0, "freeze": True}
VERSION = "ticket-counter 3.2.0 (build 5120, json-file backend)"  # benchmarks/servers/ticket_counter.py


@pytest.fixture(scope="module")
async def few_sessions(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("few-sessions")
    with served_page(folder) as url:
        world = World(folder / "world", url)
        servers = world.servers("tickets", "pages", "time")
        learning = [
            ("tickets_next_ticket", {}),
            ("tickets_current_ticket", {}),
            ("tickets_server_version", {}),
            ("pages_fetch", {"url": url}),
            ("time_convert_time", CONVERT),
        ]
        real = write_config(folder, mode="real", mcpServers=servers, store={"path": ".simroute/records.db"})
        for _ in range(LEARNING_SESSIONS):
            await run_session(real, learning)
        learned = write_config(folder, mode="learned", learned=LEARNED, mcpServers=servers, store={"path": ".simroute/records.db"})
        calls = ["tickets_next_ticket", "tickets_server_version", "pages_fetch", "tickets_current_ticket"]
        arguments = {"pages_fetch": {"url": url}}
        answers = await run_session(learned, [(name, arguments.get(name, {})) for name in calls])
    session = sessions_of(learned)[-1]
    evaluated = subprocess.run(
        [simroute_executable(), "eval", "--config", str(learned), "--session", session, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    return {
        "answers": dict(zip(calls, answers, strict=True)),
        "records": session_records(learned, session),
        "sessions": sessions_of(learned),
        "eval": evaluated,
        "tickets": world.tickets_issued(),
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


async def test_eval_predicts_the_share_the_router_delivered(few_sessions):
    evaluated = few_sessions["eval"]
    assert evaluated.returncode == 0, evaluated.stderr
    report = json.loads(evaluated.stdout)
    records = few_sessions["records"]
    live = sum(r["provenance"] in ("sim", "replay") for r in records) / len(records)
    assert report["calls"] == len(records)
    assert report["off_real_share"] == pytest.approx(live)
    assert live == pytest.approx(0.5)
