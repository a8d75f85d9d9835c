"""The dashboard in real headless Chromium on a store filled by a real run: the
learned-router tests' session fixture (`learned`, tests/conftest.py): shadowed calls
to the toolbox server with the bundled GGUF model, `simroute train`, a learned
session. `simroute dashboard` is launched on that run's config."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from backends.browser.pool import BASE_ARGS
from kit import simroute_executable
from router.launch import free_port, stop, wait_for_port

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def served(learned) -> Iterator[str]:
    port = free_port()
    log = Path(learned["folder"]) / "dashboard.log"
    process = subprocess.Popen([simroute_executable(), "dashboard", "--config", str(learned["config"]), "--port", str(port)],
                               stdout=log.open("w"), stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        wait_for_port(port, process, describe=log.read_text)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


@pytest.fixture(scope="module")
def page(served):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=list(BASE_ARGS))
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 1000})
        finally:
            browser.close()


def ready(page) -> None:
    page.wait_for_selector("#main[data-ready='1']", timeout=30_000)


def shot(page, learned, name: str) -> None:
    path = Path(learned["folder"]) / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0


def test_overview_counts_the_runs_calls_and_draws_its_charts(learned, served, page):
    page.goto(f"{served}/dashboard?view=overview")
    ready(page)
    assert page.inner_text("#total-calls") == f"{len(learned['records'])} calls"
    canvases = page.query_selector_all("#main canvas")
    assert len(canvases) == 4
    for canvas in canvases:
        painted = canvas.evaluate("c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
                                  " let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }")
        assert painted > 500
    shot(page, learned, "real-overview")


def test_fidelity_table_shows_the_trained_routers_decisions(learned, served, page):
    page.goto(f"{served}/dashboard?view=fidelity")
    ready(page)
    motto = page.query_selector("#fidelity tbody tr[data-tool='mcp/toolbox/get_motto']")
    visits = page.query_selector("#fidelity tbody tr[data-tool='mcp/toolbox/get_visits']")
    # What `simroute explain` says the router decides, the table says too.
    assert motto.query_selector("td.decision").inner_text() == learned["explained"]["get_motto"]["route"]
    assert visits.query_selector("td.decision").inner_text() == "real" == learned["explained"]["get_visits"]["route"]
    replay = {c["route"]: c for c in learned["explained"]["get_motto"]["learned"]["candidates"]}["replay"]
    assert float(motto.query_selector("td.p_replay").inner_text()) == pytest.approx(replay["probability"], abs=1e-3)
    cells = visits.inner_text().split("\t")
    assert cells[3] == str(sum(1 for r in learned["records"] if r["tool"] == "get_visits"))
    shot(page, learned, "real-fidelity")


def test_record_view_highlights_a_real_divergent_path(learned, served, page):
    record = next(r for r in learned["records"] if r["tool"] == "get_visits" and r["route"] == "shadow" and (r["divergence"] or 0) > 0)
    paths = [d["path"] for d in record["divergence_evidence"]["divergent"]]
    page.goto(f"{served}/dashboard?view=record&id={record['id']}")
    ready(page)
    # The evidence's paths (canonical form: `$.error`, `$.result` or a line of it) mark the nodes holding them.
    marked = {e.get_attribute("data-path") for e in page.query_selector_all("#sim .divergent")}
    assert marked and all(any(path == p or path.startswith(p) for path in paths) for p in marked), (paths, marked)
    assert all(any(path == p or path.startswith(p) for p in marked) for path in paths), (paths, marked)
    for path in paths:
        assert page.query_selector(f"#evidence tr.divergent[data-path='{path}']") is not None
    page.click("#diff-modes button[data-mode=text]")
    ready(page)
    assert page.query_selector_all("#line-diff tbody tr.divergent")  # the counter's line differs
    shot(page, learned, "real-record")


def test_session_timeline_and_router_view_of_the_run(learned, served, page):
    session = next(r["session"] for r in learned["records"] if r["policy"] == "learned")
    page.goto(f"{served}/dashboard?view=session&session={session}")
    ready(page)
    rows = page.query_selector_all("#records tbody tr")
    assert [r.query_selector_all("td")[4].inner_text() for r in rows] == ["toolbox.get_motto", "toolbox.get_visits"]
    assert [r.query_selector_all("td")[10].inner_text() for r in rows] == ["learned", "learned"]
    page.goto(f"{served}/dashboard?view=router")
    ready(page)
    assert page.query_selector("#router-unavailable") is None
    assert "Learned router" in page.inner_text("#main h2")
    shot(page, learned, "real-router")
