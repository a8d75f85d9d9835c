"""Real browser actions through `BrowserPool` against pages served on loopback,
with Chromium on the host and in its container (browser.isolation), same run,
interleaved round by round.

Measures, per action, the time to the observation the agent gets (action, wait
for what it started, accessibility snapshot, title):
  launch      the first action of a pool: (container start +) Chromium start + navigate
  new session a new agent session's first navigate (a new browser context)
  navigate / click (a link: navigation) / type+submit (a form) / snapshot / press_key
Both pools' traffic goes through a proxy (the contained browser's only way out is
one: a relay to a loopback listener), here a minimal forwarding proxy in this
process, so both modes pay the same proxy and differ only in where Chromium runs.
Baseline for the host: plain Playwright in the same browser (goto, load, aria
snapshot, title: the least a navigate observation needs). Median of N rounds.

Usage: python benchmarks/browser_actions.py [--rounds 10] [--smoke]
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

from _results import add_smoke_flag, row, write_results
from servers.web_pages import WebPages

from backends.browser.pool import BrowserPool
from router.config import BrowserConfig

MODES = ("host", "container")


def ref(snapshot: str, role_and_name: str) -> str:
    return re.search(re.escape(role_and_name) + r"[^\n]*?\[ref=([^\]]+)\]", snapshot).group(1)


async def timed(samples: dict[tuple[str, str], list[float]], mode: str, name: str, work):
    started = time.perf_counter()
    page = await work
    samples.setdefault((mode, name), []).append(time.perf_counter() - started)
    assert not page.is_error, page.text()
    return page


async def forward_proxy() -> tuple[asyncio.Server, int]:
    """A plain-HTTP forward proxy (absolute-form request line -> upstream), enough for loopback pages."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                line, _, rest = head.partition(b"\r\n")
                method, url, version = line.split(b" ")
                match = re.match(rb"http://([^/:]+):(\d+)(/.*)?", url)
                host, port, path = match.group(1).decode(), int(match.group(2)), match.group(3) or b"/"
                length = re.search(rb"(?im)^content-length:\s*(\d+)", rest)
                body = await reader.readexactly(int(length.group(1))) if length else b""
                up_reader, up_writer = await asyncio.open_connection(host, port)
                headers = re.sub(rb"(?im)^(proxy-authorization|proxy-connection|connection):[^\r]*\r\n", b"", rest)
                up_writer.write(
                    b" ".join([method, path, version])
                    + b"\r\n"
                    + headers.rstrip(b"\r\n")
                    + b"\r\nConnection: close\r\n\r\n"
                    + body
                )
                answer = await up_reader.read()
                up_writer.close()
                answer_head, _, answer_body = answer.partition(b"\r\n\r\n")
                answer_head = re.sub(rb"(?im)^connection:[^\r]*\r\n?", b"", answer_head)
                if not re.search(rb"(?im)^content-length:", answer_head):
                    answer_head += b"\r\nContent-Length: " + str(len(answer_body)).encode()
                writer.write(answer_head + b"\r\nConnection: keep-alive\r\n\r\n" + answer_body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, AttributeError, ValueError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    add_smoke_flag(parser)
    options = parser.parse_args()
    rounds = 1 if options.smoke else options.rounds
    samples: dict[tuple[str, str], list[float]] = {}
    proxy, proxy_port = await forward_proxy()
    with WebPages() as site:
        pools = {
            mode: BrowserPool(BrowserConfig(isolation=mode, proxy=f"http://127.0.0.1:{proxy_port}")) for mode in MODES
        }
        try:
            for mode, pool in pools.items():
                started = time.perf_counter()
                assert await pool.prepare() == mode, f"{mode} isolation is not available here"
                samples.setdefault((mode, "resolve isolation (Docker checks)"), []).append(
                    time.perf_counter() - started
                )
                await timed(samples, mode, "launch + navigate", pool.act("warm", "navigate", url=site.url("/")))
            for n in range(rounds):
                for mode, pool in pools.items():
                    await timed(
                        samples, mode, "new session: navigate", pool.act(f"s{n}", "navigate", url=site.url("/"))
                    )
                    await pool.close_session(f"s{n}")
            context = await pools["host"]._browser.new_context(proxy={"server": f"http://127.0.0.1:{proxy_port}"})
            plain = await context.new_page()

            async def baseline(url: str) -> None:
                started = time.perf_counter()
                await plain.goto(url, wait_until="domcontentloaded")
                await plain.wait_for_load_state("load")
                await plain.aria_snapshot(mode="ai")
                await plain.title()
                samples.setdefault(("host", "baseline: plain Playwright navigate"), []).append(
                    time.perf_counter() - started
                )

            for _ in range(rounds):
                await baseline(site.url("/"))
                await baseline(site.url("/form"))
                for mode, pool in pools.items():
                    page = await timed(samples, mode, "navigate", pool.act("a", "navigate", url=site.url("/")))
                    page = await timed(
                        samples, mode, "click (link)", pool.act("a", "click", ref=ref(page.snapshot, 'link "About us"'))
                    )
                    page = await timed(samples, mode, "navigate", pool.act("a", "navigate", url=site.url("/form")))
                    await timed(
                        samples,
                        mode,
                        "type + submit",
                        pool.act("a", "type", ref=ref(page.snapshot, 'textbox "Your name"'), text="Ada", submit=True),
                    )
                    await timed(samples, mode, "snapshot", pool.act("a", "snapshot"))
                    await timed(samples, mode, "press_key", pool.act("a", "press_key", key="ArrowDown"))
            await context.close()
        finally:
            for pool in pools.values():
                await pool.aclose()
            proxy.close()
    median = {key: statistics.median(values) * 1000 for key, values in samples.items()}
    names = list(dict.fromkeys(name for _, name in samples))
    print(f"real browser actions, median of {rounds} (ms), host vs container, same run, interleaved:")
    print(f"  {'':36s} {'host':>9s} {'container':>10s} {'ratio':>7s}")
    rows = []
    for name in names:
        host, contained = median.get(("host", name)), median.get(("container", name))
        ratio = f"{contained / host:7.2f}" if host and contained else ""
        print(
            f"  {name:36s} {host if host is not None else float('nan'):9.1f} "
            f"{contained if contained is not None else float('nan'):10.1f} {ratio}"
        )
        rows += [
            row(f"{name}, {mode}", value, "ms", better="lower")
            for mode, value in (("host", host), ("container", contained))
            if value is not None
        ]
        if host and contained:
            rows.append(
                row(
                    f"{name}, container / host",
                    contained / host,
                    "ratio",
                    baseline="the same action with Chromium on the host",
                    better="lower",
                )
            )
    plain = median[("host", "baseline: plain Playwright navigate")]
    print(f"navigate (host) / plain Playwright = {median[('host', 'navigate')] / plain:.2f}")
    actions = ("navigate", "click (link)", "type + submit", "snapshot", "press_key")
    worst = max(median[("container", a)] / median[("host", a)] for a in actions)
    print(f"container / host, worst action = {worst:.2f} (target <= 1.3)")
    if not options.smoke:
        rows.append(
            row(
                "navigate (host) / plain Playwright",
                median[("host", "navigate")] / plain,
                "ratio",
                baseline="plain Playwright in the same browser: goto, load, aria snapshot, title",
                better="lower",
            )
        )
        rows.append(
            row(
                "container / host, worst action",
                worst,
                "ratio",
                baseline="the same actions with Chromium on the host",
                target="<= 1.3",
                better="lower",
            )
        )
        write_results(
            __file__, "Real browser actions through the browser pool, Chromium on the host and in its container", rows
        )


if __name__ == "__main__":
    asyncio.run(main())
