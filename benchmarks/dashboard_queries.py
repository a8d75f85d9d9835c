"""The dashboard on a large store: API time per query, and time until the overview's
charts are drawn in Chromium.

A store of --records generated records (default 1,000,000) over the last day, in
SQLite (and Redis with --redis, a real redis-server started here). Per round,
interleaved: the overview, fidelity and first-page queries through the store, and
the baseline doing the same overview work in Python over every record of the range
(what the store's aggregates replace). Then `simroute dashboard` is launched on the
store and headless Chromium opens the overview: time until its charts are drawn
(target <= 2 s).

With --smoke: 2,000 records, one round.

Run: .venv/bin/python benchmarks/dashboard_queries.py [--records N] [--redis] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from _results import add_smoke_flag, row, write_results  # noqa: E402
from kit.dashboard import fill  # noqa: E402

from records.store.protocol import RecordFilter  # noqa: E402
from records.store.sqlite.store import SQLiteStore  # noqa: E402
from router.cli.launch import free_port, stop, wait_for_port  # noqa: E402

NOW = time.time()
DAY = RecordFilter(since=NOW - 86400)


async def python_overview(store, bucket_s: float) -> int:
    """The baseline: every record of the range read and grouped in Python."""
    rows = await store.recent(since=DAY.since)
    groups = Counter((int(r["ts"] // bucket_s), r["route"], r["channel"], r["provenance"]) for r in rows)
    return len(groups)


async def timed(work) -> float:
    started = time.perf_counter()
    await work()
    return (time.perf_counter() - started) * 1000


async def measure(store, rounds: int, baseline: bool) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {
        "overview": [],
        "fidelity": [],
        "page (100)": [],
        "baseline: overview in Python": [],
    }
    for _ in range(rounds):
        times["overview"].append(await timed(lambda: store.overview(DAY, bucket_s=1440.0)))
        times["fidelity"].append(await timed(lambda: store.fidelity(DAY)))
        times["page (100)"].append(await timed(lambda: store.page(DAY, limit=100)))
        if baseline:
            times["baseline: overview in Python"].append(await timed(lambda: python_overview(store, 1440.0)))
    return times


def charts_drawn_ms(config: Path) -> float:
    from playwright.sync_api import sync_playwright

    from backends.browser.pool import BASE_ARGS

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "router.cli.main", "dashboard", "--config", str(config), "--port", str(port)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=list(BASE_ARGS))
            page = browser.new_page()
            started = time.perf_counter()
            page.goto(f"http://127.0.0.1:{port}/dashboard?view=overview")
            page.wait_for_selector("#main[data-ready='1'] canvas", timeout=60_000)
            elapsed = (time.perf_counter() - started) * 1000
            browser.close()
        return elapsed
    finally:
        stop(process)


def table(name: str, times: dict[str, list[float]], rows: list[dict], base: float | None = None) -> float | None:
    """Prints the medians against the Python baseline (this store's, or `base`) and adds
    them to the results `rows`; returns the baseline."""
    if times["baseline: overview in Python"]:
        base = statistics.median(times["baseline: overview in Python"])
    print(f"\n{name}")
    print(f"{'query':32} {'median ms':>10} {'vs baseline':>12}")
    store = name.split(",")[0]
    for query, values in times.items():
        if values:
            median = statistics.median(values)
            print(f"{query:32} {median:10.1f} {(f'{median / base:.3f}x' if base else '-'):>12}")
            rows.append(row(f"{store}: {query} median", median, "ms", better="lower"))
            if base and not query.startswith("baseline"):
                rows.append(
                    row(
                        f"{store}: {query} / overview in Python",
                        median / base,
                        "ratio",
                        baseline="the overview's work done in Python over every record of the range",
                        better="lower",
                    )
                )
    return base


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--redis", action="store_true")
    add_smoke_flag(parser)
    options = parser.parse_args()
    if options.smoke:
        options.records, options.rounds = 2_000, 1
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        store = await SQLiteStore(folder / "records.db").open()
        started = time.perf_counter()
        await fill(store, options.records, now=NOW, batch=20_000)
        print(f"SQLite: {options.records} records written in {time.perf_counter() - started:.0f} s")
        python_baseline = table(
            f"SQLite, {options.records} records", await measure(store, options.rounds, baseline=True), rows
        )
        await store.aclose()
        config = folder / "simroute.yaml"
        config.write_text(f'{{"store": {{"path": "{folder / "records.db"}"}}}}')
        drawn = await asyncio.to_thread(charts_drawn_ms, config)
        print(f"SQLite: overview charts drawn in Chromium after {drawn:.0f} ms (target <= 2000)")
        rows.append(row("SQLite: overview charts drawn in Chromium", drawn, "ms", target="<= 2000", better="lower"))
        if options.redis:
            from kit.redis import RedisServer

            from records.store.redis.store import RedisStore

            server = RedisServer(folder).start()
            try:
                redis = await RedisStore(server.url).open()
                started = time.perf_counter()
                await fill(redis, options.records, now=NOW, batch=5_000)
                print(f"\nRedis: {options.records} records written in {time.perf_counter() - started:.0f} s")
                # The Python baseline reads every record of the range: over Redis at this size it
                # outlasts the client's socket timeout; the SQLite run's (faster) baseline stands in.
                table(
                    f"Redis, {options.records} records (vs the SQLite Python baseline)",
                    await measure(redis, options.rounds, baseline=False),
                    rows,
                    base=python_baseline,
                )
                await redis.aclose()
                config.write_text(f'{{"store": {{"url": "{server.url}"}}}}')
                drawn = await asyncio.to_thread(charts_drawn_ms, config)
                print(f"Redis: overview charts drawn in Chromium after {drawn:.0f} ms (target <= 2000)")
                rows.append(
                    row("Redis: overview charts drawn in Chromium", drawn, "ms", target="<= 2000", better="lower")
                )
            finally:
                server.kill()
    if not options.smoke:
        write_results(__file__, f"The dashboard on a store of {options.records:,} records", rows)


if __name__ == "__main__":
    asyncio.run(main())
