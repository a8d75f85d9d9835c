"""Real browser actions through `BrowserPool` against pages served on loopback.

Measures, per action, the time to the observation the agent gets (action, wait
for what it started, accessibility snapshot, title):
  launch      the first action of the router: Playwright driver + Chromium start + navigate
  new session a new agent session's first navigate (a new browser context)
  navigate / click (a link: navigation) / type+submit (a form) / snapshot / press_key
and, as the baseline, plain Playwright in the same browser (goto, load, aria
snapshot, title: the least a navigate observation needs), interleaved with
`navigate`. Median of N rounds, one session, Chromium already running.

Usage: python benchmarks/browser_actions.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from backends.browser.pool import BrowserPool  # noqa: E402
from router.config import BrowserConfig  # noqa: E402
from servers.web_pages import WebPages  # noqa: E402


def ref(snapshot: str, role_and_name: str) -> str:
    return re.search(re.escape(role_and_name) + r"[^\n]*?\[ref=([^\]]+)\]", snapshot).group(1)


async def timed(samples: dict[str, list[float]], name: str, work):
    started = time.perf_counter()
    page = await work
    samples.setdefault(name, []).append(time.perf_counter() - started)
    assert not page.is_error, page.text()
    return page


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    rounds = parser.parse_args().rounds
    samples: dict[str, list[float]] = {}
    with WebPages() as site:
        pool = BrowserPool(BrowserConfig())
        try:
            await timed(samples, "launch + navigate", pool.act("warm", "navigate", url=site.url("/")))
            for n in range(rounds):
                await timed(samples, "new session: navigate", pool.act(f"s{n}", "navigate", url=site.url("/")))
                await pool.close_session(f"s{n}")
            context = await pool._browser.new_context()
            plain = await context.new_page()

            async def baseline(url: str) -> None:
                started = time.perf_counter()
                await plain.goto(url, wait_until="domcontentloaded")
                await plain.wait_for_load_state("load")
                await plain.aria_snapshot(mode="ai")
                await plain.title()
                samples.setdefault("baseline: plain Playwright navigate", []).append(time.perf_counter() - started)

            for _ in range(rounds):
                await baseline(site.url("/"))
                await baseline(site.url("/form"))
                page = await timed(samples, "navigate", pool.act("a", "navigate", url=site.url("/")))
                page = await timed(samples, "click (link)", pool.act("a", "click", ref=ref(page.snapshot, 'link "About us"')))
                page = await timed(samples, "navigate", pool.act("a", "navigate", url=site.url("/form")))
                await timed(samples, "type + submit", pool.act("a", "type", ref=ref(page.snapshot, 'textbox "Your name"'), text="Ada", submit=True))
                await timed(samples, "snapshot", pool.act("a", "snapshot"))
                await timed(samples, "press_key", pool.act("a", "press_key", key="ArrowDown"))
            await context.close()
        finally:
            await pool.aclose()
    print(f"real browser actions, Chromium {BrowserConfig().executable_path}, median of {rounds}:")
    for name, values in samples.items():
        print(f"  {name:36s} {statistics.median(values) * 1000:8.1f} ms  (n={len(values)})")
    ratio = statistics.median(samples["navigate"]) / statistics.median(samples["baseline: plain Playwright navigate"])
    print(f"navigate / plain Playwright = {ratio:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
