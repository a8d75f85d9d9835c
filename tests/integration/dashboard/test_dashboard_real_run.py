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
from kit.dashboard import painted_pixels
from kit.launch import simroute_executable

from backends.browser.pool import BASE_ARGS
from router.cli.launch import free_port, stop, wait_for_port

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def served(learned) -> Iterator[str]:
    port = free_port()
    log = Path(learned["folder"]) / "dashboard.log"
    process = subprocess.Popen(
        [simroute_executable(), "dashboard", "--config", str(learned["config"]), "--port", str(port)],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
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
        painted = painted_pixels(page, canvas)
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
    record = next(
        r
        for r in learned["records"]
        if r["tool"] == "get_visits" and r["route"] == "shadow" and (r["divergence"] or 0) > 0
    )
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


def test_router_view_draws_the_share_vs_fidelity_curve_and_shows_the_cards_figures(learned, served, page):
    import json

    card = json.loads(
        (Path(learned["folder"]) / ".simroute" / "router.card.json").read_text()
    )  # written by `simroute train`
    trained = {route: report for route, report in card["routes"].items() if report["trained"]}
    assert "replay" in trained and trained["replay"]["curve"] and trained["replay"]["calibration"]
    page.goto(f"{served}/dashboard?view=router")
    ready(page)
    assert f"target fidelity {card['target_fidelity']}" in page.inner_text("#main h2")
    canvases = page.query_selector_all("#main canvas")
    assert len(canvases) == len(trained)  # one curve per trained route
    for canvas in canvases:
        painted = painted_pixels(page, canvas)
        assert painted > 500
    drawn = {
        c.evaluate("c => Chart.getChart(c).options.plugins.title.text").split(":")[0]: c.evaluate(
            "c => Chart.getChart(c).data.datasets.map(d => d.data)"
        )
        for c in canvases
    }
    for route, report in trained.items():
        assert drawn[route] == [
            [p["off_real_share"] for p in report["curve"]],
            [p["fidelity"] for p in report["curve"]],
        ]  # the card's curve
        figures = {
            r.get_attribute("data-figure"): r.query_selector("td").inner_text()
            for r in page.query_selector_all(f"table.figures[data-route='{route}'] tr")
        }
        chosen = next(p for p in report["curve"] if p["threshold"] == report["threshold"])
        assert float(figures["threshold"]) == pytest.approx(report["threshold"], abs=1e-4)
        assert float(figures["cost_saved"]) == pytest.approx(chosen["cost_saved"], abs=1e-4)
        assert float(figures["share"]) == pytest.approx(chosen["off_real_share"], abs=1e-4)
        assert float(figures["fidelity"]) == pytest.approx(chosen["fidelity"], abs=1e-4)
        assert int(figures["wrong"]) == chosen["wrong"]
        assert float(figures["cv_roc_auc"]) == pytest.approx(report["cv_roc_auc"], abs=1e-4)
        bins = [
            [td.inner_text() for td in r.query_selector_all("td")]
            for r in page.query_selector_all(f"table.calibration[data-route='{route}'] tbody tr")
        ]
        assert bins == [
            [f"{b['predicted']:.3f}", f"{b['acceptable']:.3f}", str(b["count"])] for b in report["calibration"]
        ]
    # The promise: what the router would deliver over the stored calls, and why the rest stay real.
    promised = {
        r.get_attribute("data-figure"): r.query_selector("td").inner_text()
        for r in page.query_selector_all("table.figures[data-route='promise'] tr")
    }
    assert int(promised["calls"]) == card["promise"]["calls"] > 0
    assert float(promised["off_real_share"]) == pytest.approx(card["promise"]["off_real_share"], abs=1e-4)
    assert len(page.query_selector_all("table.why-real tbody tr")) == len(card["promise"]["why_real"]) > 0
    for route in card["routes"].keys() - trained.keys():  # a route without a classifier says why
        assert page.query_selector(f"p.note[data-route='{route}']") is not None
    shot(page, learned, "real-router-figures")
