"""The dashboard in real headless Chromium, against `simroute dashboard` launched as a
user launches it, on a generated store of 100,000 records in SQLite and in Redis (Playwright's sync API:
this module's tests are synchronous; /metrics of `simroute serve` is tested in
test_metrics.py)."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx2 as httpx
import pytest
from kit.dashboard import KNOWN_PATH, fill, generated_record, painted_pixels
from kit.launch import simroute_executable, write_config
from kit.redis import RedisServer

from backends.browser.pool import BASE_ARGS
from records.store.redis.store import RedisStore
from records.store.sqlite.store import SQLiteStore
from router.cli.launch import free_port, stop, wait_for_port

pytestmark = pytest.mark.integration

TOKEN = "dashboard-test-token-0123456789"
RECORDS = 100_000  # the size the dashboard must stay quick at (issue: 100,000 records)


class Launched:
    def __init__(self, url: str, kind: str, open_store, known_id: str, out: Path) -> None:
        self.url, self.kind, self.open_store, self.known_id, self.out = url, kind, open_store, known_id, out

    def write(self, rows: list[dict]) -> None:
        """Write records into the dashboard's store from another thread (Playwright's
        sync API holds this thread's event loop)."""

        async def work() -> None:
            store = await self.open_store()
            try:
                await store.upsert(rows)
            finally:
                await store.aclose()

        with ThreadPoolExecutor(1) as writer:
            writer.submit(asyncio.run, work()).result()


@pytest.fixture(scope="module", params=["sqlite", "redis"])
def dashboard(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launched]:
    """`simroute dashboard` on a generated store: SQLite, then Redis (a real redis-server)."""
    folder = tmp_path_factory.mktemp(f"dashboard-{request.param}")
    redis = RedisServer(folder).start() if request.param == "redis" else None
    try:
        if redis is None:
            config = write_config(folder)
            open_store = lambda: SQLiteStore(folder / "records.db").open()  # noqa: E731
        else:
            config = write_config(folder, store={"url": redis.url})
            open_store = lambda: RedisStore(redis.url).open()  # noqa: E731 (the prefix a config's store.url uses)
        filled = asyncio.run(fill_opened(open_store, RECORDS))
        port = free_port()
        log = folder / "dashboard.log"
        process = subprocess.Popen(
            [simroute_executable(), "dashboard", "--config", str(config), "--port", str(port)],
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "SIMROUTE_TOKEN": TOKEN},
        )
        try:
            wait_for_port(port, process, describe=log.read_text)
            yield Launched(f"http://127.0.0.1:{port}", request.param, open_store, filled["known_id"], folder)
        finally:
            stop(process)
    finally:
        if redis is not None:
            redis.kill()


async def fill_opened(open_store, count: int) -> dict:
    store = await open_store()
    try:
        return await fill(store, count, now=time.time())
    finally:
        await store.aclose()


@pytest.fixture(scope="module")
def page(dashboard: Launched):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=list(BASE_ARGS))
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{dashboard.url}/dashboard?token={TOKEN}")  # once: the token becomes an HttpOnly cookie
            yield page
        finally:
            browser.close()


def ready(page, timeout_ms: int = 15_000) -> None:
    page.wait_for_selector("#main[data-ready='1']", timeout=timeout_ms)


def shot(page, dashboard: Launched, name: str) -> None:
    path = dashboard.out / f"{dashboard.kind}-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0


def test_the_token_is_required_and_traded_for_an_http_only_cookie(dashboard: Launched, page):
    assert httpx.get(f"{dashboard.url}/dashboard/api/overview", timeout=10).status_code == 401
    assert httpx.get(f"{dashboard.url}/metrics", timeout=10).status_code == 401
    rebound = httpx.get(
        f"{dashboard.url}/dashboard", headers={"Host": "evil.example", "Authorization": f"Bearer {TOKEN}"}, timeout=10
    )
    assert rebound.status_code == 421  # a DNS-rebinding page is refused by its Host
    assert "token=" not in page.url  # dropped from the address once in the cookie
    cookie = next(c for c in page.context.cookies() if c["name"] == "simroute_dashboard")
    assert cookie["httpOnly"]
    assert (
        httpx.get(f"{dashboard.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10).status_code
        == 200
    )


def test_overview_draws_its_charts_from_the_store(dashboard: Launched, page):
    page.goto(f"{dashboard.url}/dashboard?view=overview")
    ready(page)
    assert page.inner_text("#total-calls") == f"{RECORDS + 2} calls"
    canvases = page.query_selector_all("#main canvas")
    assert len(canvases) == 4
    for canvas in canvases:
        assert painted_pixels(page, canvas) > 500
    shot(page, dashboard, "overview")


def test_fidelity_table_and_a_filter_kept_in_the_address(dashboard: Launched, page):
    page.goto(f"{dashboard.url}/dashboard?view=fidelity")
    ready(page)
    rows = page.query_selector_all("#fidelity tbody tr")
    assert len(rows) == 6  # one per generated tool, and the diverted call's
    weather = next(r.inner_text() for r in rows if "forecast" in r.inner_text())
    assert "content:" in weather and "none:" in weather
    # Its shadow pairs by how the simulated side was made (kit.dashboard: state, model, none named).
    subs = next(r.query_selector("td.subs").inner_text() for r in rows if "forecast" in r.inner_text())
    assert all(f"{sub} " in subs for sub in ("state", "model", "none")) and "% divergent, mean " in subs, subs
    assert {r.query_selector("td.decision").inner_text() for r in rows} == {"not available yet"}  # no model card yet
    # Simulated answers by the model that wrote them (kit.dashboard's model-made shadow sides: stub.gguf).
    assert page.query_selector("#models tr[data-model='stub.gguf']") is not None
    assert page.query_selector("#no-adoptions") is not None  # nothing adopted on this store
    shot(page, dashboard, "fidelity")

    page.fill("#filters input[name=tool]", "echo")
    page.click("#filters button[type=submit]")
    ready(page)
    assert "tool=echo" in page.url and "view=fidelity" in page.url
    rows = page.query_selector_all("#fidelity tbody tr")
    assert [r.inner_text().split("\t")[2] for r in rows] == ["echo"]
    page.reload()  # the address alone brings the filtered view back
    ready(page)
    assert page.input_value("#filters input[name=tool]") == "echo"
    assert len(page.query_selector_all("#fidelity tbody tr")) == 1


def test_fidelity_table_shows_the_routers_decision_and_probability_once_a_model_is_trained(dashboard: Launched, page):
    from kit.learned import generate, train_and_save

    model = dashboard.out / ".simroute" / "router.skops"
    train_and_save(model, generate(900))  # `simroute train`'s output: the model and its card
    try:
        page.goto(f"{dashboard.url}/dashboard?view=fidelity&sort=p_sim")
        # The first view after a model appears builds the router's statistics from all
        # 100,000 records once (about 13 s on a 2-core machine with the suite beside it).
        ready(page, timeout_ms=90_000)
        rows = page.query_selector_all("#fidelity tbody tr")
        assert len(rows) == 6
        forecast = page.query_selector("#fidelity tbody tr[data-tool='mcp/weather/forecast']")
        # The generated records carry no safety class: the router keeps them real, and shows P(ok) beside it.
        assert forecast.query_selector("td.decision").inner_text() == "real"
        assert 0.0 <= float(forecast.query_selector("td.p_sim").inner_text()) <= 1.0
        assert "sim: model" in forecast.query_selector("td.p_sim").get_attribute("title")
        shot(page, dashboard, "fidelity-router")
    finally:
        model.unlink()
        model.with_suffix(".card.json").unlink()


def test_record_view_highlights_the_divergent_path_and_shows_masked_ones(dashboard: Launched, page):
    page.goto(f"{dashboard.url}/dashboard?view=record&id={dashboard.known_id}")
    ready(page)
    sim = page.query_selector(f"#sim .divergent[data-path='{KNOWN_PATH}']")
    real = page.query_selector(f"#real .divergent[data-path='{KNOWN_PATH}']")
    assert sim is not None and sim.inner_text() == "temperature: 21.5"
    assert real is not None and real.inner_text() == "temperature: 3.5"
    assert page.query_selector("#real .masked[data-path='$.result.at']") is not None
    assert page.query_selector("#real .divergent[data-path='$.result.unit']") is None  # agreeing paths are not marked
    assert page.query_selector(f"#evidence tr.divergent[data-path='{KNOWN_PATH}']") is not None
    shot(page, dashboard, "record")


def test_record_view_line_diffs_highlight_a_divergent_screen_line_and_show_noise(dashboard: Launched, page):
    from kit.dashboard import SHELL_DIVERGENT_LINE, SHELL_NOISY_LINE, shell_record

    record = shell_record(time.time() - 2 * 86400)  # outside the default range: the overview's totals stay
    dashboard.write([record.to_json()])
    page.goto(f"{dashboard.url}/dashboard?view=record&id={record.id}")
    ready(page)
    assert (
        page.query_selector("#diff-modes button.active").get_attribute("data-mode") == "screen"
    )  # a shell record opens on its screen
    divergent = page.query_selector_all("#line-diff tbody tr.divergent")
    assert [r.get_attribute("data-real-line") for r in divergent] == [str(SHELL_DIVERGENT_LINE)]
    assert divergent[0].inner_text().split("\t")[1:4] == ["ok: 3 files", str(SHELL_DIVERGENT_LINE), "ok: 5 files"]
    assert (
        divergent[0].query_selector("td.line").evaluate("e => getComputedStyle(e).backgroundColor")
        == "rgb(255, 214, 214)"
    )
    noisy = page.query_selector_all("#line-diff tbody tr.masked")
    assert [r.get_attribute("data-real-line") for r in noisy] == [str(SHELL_NOISY_LINE)] and "noise" in noisy[
        0
    ].inner_text()
    assert len(page.query_selector_all("#line-diff tbody tr.equal")) == 2
    shot(page, dashboard, "record-screen")

    page.click("#diff-modes button[data-mode=text]")  # the text line diff: the status line too, equal
    ready(page)
    assert "diff=text" in page.url
    assert [r.get_attribute("data-real-line") for r in page.query_selector_all("#line-diff tbody tr.divergent")] == [
        str(SHELL_DIVERGENT_LINE)
    ]
    assert len(page.query_selector_all("#line-diff tbody tr.equal")) == 3
    page.click("#diff-modes button[data-mode=tree]")
    ready(page)
    assert page.query_selector("#real .tree") is not None and page.query_selector("#line-diff") is None
    shot(page, dashboard, "record-text")


def test_session_timeline_and_router_view(dashboard: Launched, page):
    page.goto(f"{dashboard.url}/dashboard?view=session&session=session-3")
    ready(page)
    steps = [int(r.query_selector_all("td")[2].inner_text()) for r in page.query_selector_all("#records tbody tr")]
    assert steps == list(range(1, 21))  # step by step, in order
    shot(page, dashboard, "session")
    page.goto(f"{dashboard.url}/dashboard?view=session&session=session-known")
    ready(page)
    rows = page.query_selector_all("#records tbody tr")
    assert [r.get_attribute("class") for r in rows] == [
        "clickable",
        "clickable diverted",
    ]  # where rehearsal diverted a call
    assert rows[1].query_selector_all("td")[10].inner_text() == "rehearsal"
    page.goto(f"{dashboard.url}/dashboard?view=router")
    ready(page)
    assert "not available yet" in page.inner_text("#router-unavailable")


def test_a_new_record_appears_without_reloading(dashboard: Launched, page):
    page.goto(f"{dashboard.url}/dashboard?view=records")
    ready(page)
    assert len(page.query_selector_all("#records tbody tr")) == 100
    record = generated_record(random.Random(1), time.time(), 999_999, session="live-session")
    dashboard.write([record.to_json(), generated_record(random.Random(2), time.time(), 999_998).to_json()])
    page.wait_for_selector(f"#records tbody tr.new[data-id='{record.id}']", timeout=10_000)
    shot(page, dashboard, "live")


def test_the_page_and_its_charts_load_from_the_dashboards_own_origin_only(dashboard: Launched, page):
    """Offline: every request the page makes goes to the dashboard itself (anything
    else is recorded and refused), and Chart.js comes from its static route."""
    from urllib.parse import urlsplit

    from router.dashboard.routes import CHART_JS

    own = urlsplit(dashboard.url)
    context = page.context.browser.new_context(
        viewport={"width": 1400, "height": 1000}
    )  # an empty cache: every file is fetched
    try:
        requested, answered = [], {}
        context.route(
            "**/*", lambda route: route.continue_() if urlsplit(route.request.url)[:2] == own[:2] else route.abort()
        )
        fresh = context.new_page()
        fresh.on("request", lambda request: requested.append(request.url))
        fresh.on("response", lambda response: answered.setdefault(urlsplit(response.url).path, response))
        fresh.goto(f"{dashboard.url}/dashboard?view=overview&token={TOKEN}")
        ready(fresh)
        canvases = fresh.query_selector_all("#main canvas")
        assert len(canvases) == 4 and all(painted_pixels(fresh, canvas) > 500 for canvas in canvases)
        shot(fresh, dashboard, "offline-overview")
        foreign = [url for url in requested if urlsplit(url)[:2] != own[:2]]
        assert not foreign, foreign
        chart_js = answered["/dashboard/static/chart.min.js"]
        assert (
            chart_js.status == 200 and chart_js.body() == CHART_JS.read_bytes()
        )  # Debian's Chart.js, served by the dashboard
        assert fresh.evaluate("typeof Chart") == "function"
        sources = fresh.evaluate("[...document.querySelectorAll('script[src], link[href]')].map(e => e.src || e.href)")
        assert f"{dashboard.url}/dashboard/static/chart.min.js" in sources
        assert all(urlsplit(s)[:2] == own[:2] for s in sources), sources
    finally:
        context.close()


def add_noise(dashboard: Launched, tool: tuple[str, str, str], pairs: list[list[str]]) -> None:
    """Real-vs-real pairs of a tool's answers into the store's noise table (as the noise learner writes them)."""
    from calls import tool_key

    async def work() -> None:
        store = await dashboard.open_store()
        try:
            for disagreeing in pairs:
                await store.add_noise_observation(tool_key(*tool), disagreeing)
        finally:
            await store.aclose()

    with ThreadPoolExecutor(1) as writer:
        writer.submit(asyncio.run, work()).result()


def fidelity_cells(page) -> list[list[str]]:
    return [r.inner_text().split("\t") for r in page.query_selector_all("#fidelity tbody tr")]


def sorted_as_the_api_says(page, dashboard: Launched, key: str) -> list[str]:
    """The tools in the order the column `key` puts them, from the API's full-precision
    figures (all records: the range the page is opened on): highest first, none last,
    ties in the API's order."""
    rows = page.request.get(f"{dashboard.url}/dashboard/api/fidelity?since=0").json()["rows"]
    value = lambda r: (  # noqa: E731
        r.get(key)
        if key in r
        else next(
            (c["probability"] for c in (r.get("router") or {}).get("candidates", []) if f"p_{c['route']}" == key),
            None,
        )
    )
    return [r["tool"] for r in sorted(rows, key=lambda r: -1 if value(r) is None else value(r), reverse=True)]


def test_fidelity_table_sorts_by_the_clicked_column_and_shows_the_noise_table(dashboard: Launched, page):
    add_noise(
        dashboard,
        ("mcp", "weather", "forecast"),
        [["$.result.at"], ["$.result.at", "$.result.issued"], ["$.result.at"]],
    )
    page.goto(f"{dashboard.url}/dashboard?view=fidelity&range=all")
    ready(page)
    headers = [h.inner_text() for h in page.query_selector_all("#fidelity thead th")]
    assert headers[8:10] == ["Noise pairs", "Noisy paths"]  # after "By sub" and "Kinds"
    noise = {row[2]: (row[8], row[9]) for row in fidelity_cells(page)}
    assert noise.pop("forecast") == ("3", "2")  # 3 pairs, disagreeing at 2 paths
    assert set(noise.values()) == {("0", "0")}

    page.click("#fidelity thead th:has-text('Mean divergence')")
    ready(page)
    assert "sort=mean_divergence" in page.url and page.inner_text("#fidelity thead th:nth-child(6)").endswith("▼")
    by_divergence = [r[2] for r in fidelity_cells(page)]
    assert (
        by_divergence == sorted_as_the_api_says(page, dashboard, "mean_divergence") and by_divergence[-1] == "set_alert"
    )  # never shadowed: last
    shot(page, dashboard, "fidelity-by-divergence")

    page.click("#fidelity thead th:has-text('Tool')")
    ready(page)
    assert "sort=tool" in page.url
    by_tool = [r[2] for r in fidelity_cells(page)]
    assert by_tool == sorted(by_tool, reverse=True) and by_tool[0] == "set_alert"
    assert by_tool != by_divergence

    page.click("#fidelity thead th:has-text('Noise pairs')")
    ready(page)
    assert fidelity_cells(page)[0][2] == "forecast"
    page.reload()  # the sort is kept in the address
    ready(page)
    assert "sort=noise_pairs" in page.url and fidelity_cells(page)[0][2] == "forecast"
    shot(page, dashboard, "fidelity-by-noise")


def test_fidelity_table_sorts_by_p_sim_once_a_model_is_trained(dashboard: Launched, page):
    from kit.learned import generate, train_and_save

    model = dashboard.out / ".simroute" / "router.skops"
    train_and_save(model, generate(900))
    try:
        page.goto(f"{dashboard.url}/dashboard?view=fidelity&range=all")
        ready(page)
        for key, title in (("p_sim", "P(ok) sim"), ("p_replay", "P(ok) replay")):
            page.click(f"#fidelity thead th:has-text('{title}')")
            ready(page)
            assert f"sort={key}" in page.url
            shown = [
                (r.get_attribute("data-tool").split("/")[2], r.query_selector(f"td.{key}").inner_text())
                for r in page.query_selector_all("#fidelity tbody tr")
            ]
            assert [tool for tool, _ in shown] == sorted_as_the_api_says(page, dashboard, key)
            assert len({p for _, p in shown if p != "–"}) >= 2  # figures that differ: the column decides the order
        shot(page, dashboard, "fidelity-by-p-sim")
    finally:
        model.unlink()
        model.with_suffix(".card.json").unlink()


def test_an_answers_source_shows_beside_its_provenance(dashboard: Launched, page):
    from dataclasses import replace

    from kit.records import sourced_record

    from records.record import new_record_id

    record = replace(sourced_record(session="sourced-session", record_id=new_record_id()), ts=time.time())
    dashboard.write([record.to_json()])
    page.goto(f"{dashboard.url}/dashboard?view=session&session=sourced-session")
    ready(page)
    [row] = page.query_selector_all("#records tbody tr")
    assert row.query_selector("td.provenance").inner_text() == "sim (model stub.gguf fork=f-1)"
    page.goto(f"{dashboard.url}/dashboard?view=record&id={record.id}")
    ready(page)
    assert page.inner_text("#main h2").endswith("— sim (sim: model stub.gguf fork=f-1)")


def test_the_session_view_marks_where_the_session_diverged_into_its_fork(dashboard: Launched, page):
    from kit.records import forked_session

    records = forked_session("forked-session", ts=time.time() - 10)
    dashboard.write([record.to_json() for record in records])
    page.goto(f"{dashboard.url}/dashboard?view=session&session=forked-session")
    ready(page)
    rows = page.query_selector_all("#records tbody tr")
    assert [r.get_attribute("data-id") for r in rows if "fork-point" in (r.get_attribute("class") or "")] == [
        records[1].id
    ]
    assert page.inner_text("#fork-points") == (
        "Step 1: diverged into fork fork-1a2b (from session sandbox): "
        "copied /workspace 2048 B, /tmp 0 B, cwd /workspace/data, 7 variables"
    )
