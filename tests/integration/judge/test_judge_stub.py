"""`simroute judge` against an OpenAI-compatible judge written here (kit/judge.py) on
real SQLite and Redis stores: verdicts parsed, a malformed verdict asked once more and
then counted as failed, control pairs scored, the scores stored beside the records
and shown by the dashboard's API (`simroute dashboard`, launched as a user launches it)
and, on SQLite, by its fidelity and record views in headless Chromium."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import httpx2 as httpx
import pytest
from kit.judge import judge_stub, judged_rows
from kit.launch import simroute_executable, write_config
from kit.redis import RedisServer
from typer.testing import CliRunner

from records.store.protocol import RecordFilter
from records.store.redis.store import RedisStore
from records.store.sqlite.store import SQLiteStore
from router.cli.launch import free_port, stop, wait_for_port
from router.cli.main import app

pytestmark = pytest.mark.integration


async def _fill(store) -> list[dict]:
    await store.open()
    try:
        rows = judged_rows()
        await store.upsert(rows)
        return rows
    finally:
        await store.aclose()


def _judge(config: Path, url: str, *args: str) -> dict:
    result = CliRunner().invoke(
        app, ["judge", "--config", str(config), "--endpoint", url, "--model", "stub-judge", "--json", *args]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _check_report(report: dict, stub) -> None:
    simulated, control = report["simulated"], report["control"]
    # Six shadow pairs: four read at once, one read on the retry, one unreadable twice.
    assert (
        simulated["pairs"] == 6 and simulated["scored"] == 5 and simulated["failed"] == 1 and simulated["retried"] == 2
    )
    assert simulated["dimensions"]["format"] == pytest.approx((5 + 4 + 3 + 1 + 5) / 5)
    assert simulated["score_100"] == pytest.approx(((5 + 4 + 3 + 1 + 5) / 5 - 1) / 4 * 100, abs=0.01)
    # Three calls answered for real in two sessions: identical answers, the judge's "indistinguishable".
    assert control["pairs"] == 3 and control["scored"] == 3 and control["score_100"] == 100.0
    assert report["failure_rate"] == pytest.approx(1 / 9, abs=1e-4)
    assert report["failures"][0]["reason"].startswith("unreadable verdict twice")
    # The judge scores the pairs that diverged more lower: full rank agreement.
    assert report["agreement"]["pairs"] == 5 and report["agreement"]["spearman"] == pytest.approx(1.0)
    assert report["stored"] == 8
    # Each pair asked once, the two malformed ones twice; a retry shows the unreadable answer and asks again.
    assert len(stub.bodies) == 11
    retries = [body for body in stub.bodies if len(body["messages"]) == 4]
    assert len(retries) == 2 and all("could not be read" in body["messages"][3]["content"] for body in retries)
    assert {body["seed"] for body in retries} == {1}  # asked again with another seed
    assert all(body["temperature"] == 0.0 and body["response_format"]["type"] == "json_schema" for body in stub.bodies)


def _in_chromium(url: str, record_id: str) -> tuple[list[str], str, list[str]]:
    """The fidelity view's header and forecast row, and the record view's judge table, as Chromium shows them."""
    from playwright.sync_api import sync_playwright

    from backends.browser.pool import BASE_ARGS

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=list(BASE_ARGS))
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.goto(f"{url}/dashboard?view=fidelity")
            page.wait_for_selector("#main[data-ready='1']", timeout=15_000)
            header = [th.inner_text() for th in page.query_selector_all("#fidelity thead th")]
            row = next(
                r.inner_text() for r in page.query_selector_all("#fidelity tbody tr") if "forecast" in r.inner_text()
            )
            page.goto(f"{url}/dashboard?view=record&id={record_id}")
            page.wait_for_selector("#main[data-ready='1']", timeout=15_000)
            judged = [r.inner_text() for r in page.query_selector_all("#judge tbody tr")]
        finally:
            browser.close()
    return header, row, judged


async def _dashboard_judge(config: Path, tmp_path: Path, record_id: str, *, browser: bool = False) -> tuple[dict, dict]:
    port = free_port()
    log = tmp_path / "dashboard.log"
    process = subprocess.Popen(
        [simroute_executable(), "dashboard", "--config", str(config), "--port", str(port)],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        wait_for_port(port, process, describe=log.read_text)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            fidelity = (await http.get("/dashboard/api/fidelity")).json()
            record = (await http.get("/dashboard/api/record", params={"id": record_id})).json()
        if browser:
            header, row, judged = await asyncio.to_thread(_in_chromium, f"http://127.0.0.1:{port}", record_id)
            assert header[-2:] == ["Judge score", "Judge control"]
            assert row.split("\t")[-2:] == ["65.0", "100.0"]
            (scored,) = judged
            assert scored.split("\t")[:8] == ["stub-judge (judge-v1)", "simulated", "1", "1", "1", "1", "1", "0.000"]
    finally:
        stop(process)
    return fidelity, record


async def _stored_and_shown(config: Path, tmp_path: Path, rows: list[dict], *, browser: bool = False) -> None:
    rome = next(row for row in rows if row["arguments"]["city"] == "Rome")
    fidelity, record = await _dashboard_judge(config, tmp_path, rome["id"], browser=browser)
    (row,) = [r for r in fidelity["rows"] if r["tool"] == "forecast"]
    judge = row["judge"]
    assert judge["model"] == "stub-judge" and judge["pairs"] == 5 and judge["controls"] == 3
    assert judge["score"] == pytest.approx((100 + 75 + 50 + 0 + 100) / 5) and judge["control"] == 100.0
    (scored,) = record["judge"]
    assert scored["kind"] == "simulated" and scored["scores"]["factuality"] == 1 and scored["score"] == 0.0
    assert scored["prompt_version"] == "judge-v1" and scored["divergence"] == 0.9


async def test_judge_on_sqlite(tmp_path: Path):
    config = write_config(tmp_path)
    rows = await _fill(SQLiteStore(tmp_path / "records.db"))
    with judge_stub() as stub:
        report = await asyncio.to_thread(_judge, config, stub.url)
    _check_report(report, stub)
    await _stored_and_shown(config, tmp_path, rows, browser=True)
    # Judged again by the same model: each score replaced, not doubled.
    with judge_stub() as stub:
        again = await asyncio.to_thread(_judge, config, stub.url, "--limit", "2", "--controls", "0")
    assert again["simulated"]["pairs"] == 2 and again["control"]["pairs"] == 0
    store = await SQLiteStore(tmp_path / "records.db", read_only=True).open()
    try:
        (summary,) = await store.judge_summary(RecordFilter(since=0))
    finally:
        await store.aclose()
    assert summary["simulated"]["pairs"] == 5 and summary["control"]["pairs"] == 3


async def test_judge_on_redis(tmp_path: Path, redis_server: RedisServer):
    config = write_config(tmp_path, store={"url": redis_server.url})
    rows = await _fill(RedisStore(redis_server.url))
    with judge_stub() as stub:
        report = await asyncio.to_thread(_judge, config, stub.url)
    _check_report(report, stub)
    await _stored_and_shown(config, tmp_path, rows)


def test_no_store_leaves_no_scores_and_a_down_judge_is_a_clear_error(tmp_path: Path):
    config = write_config(tmp_path)
    asyncio.run(_fill(SQLiteStore(tmp_path / "records.db")))
    with judge_stub() as stub:
        report = _judge(config, stub.url, "--no-store")
    assert report["stored"] == 0 and report["simulated"]["scored"] == 5

    async def summary():
        store = await SQLiteStore(tmp_path / "records.db", read_only=True).open()
        try:
            return await store.judge_summary(RecordFilter(since=0))
        finally:
            await store.aclose()

    assert asyncio.run(summary()) == []
    with judge_stub() as stub:
        table = CliRunner().invoke(app, ["judge", "--config", str(config), "--endpoint", stub.url, "--no-store"])
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    (control,) = [line for line in lines if "real vs real (control)" in line]
    assert "100.0" in control and any("Spearman" in line and "1.000" in line for line in lines)
    assert any("forecast" in line and "65.0 (5)" in line and "100.0 (3)" in line for line in lines)
    down = CliRunner().invoke(
        app, ["judge", "--config", str(config), "--endpoint", f"http://127.0.0.1:{free_port()}/v1"]
    )
    assert down.exit_code == 1 and "unreachable" in down.output
