"""A new shell session: from the warm pool vs a cold `docker run`.

Measures the time from a new agent session's first `shell_exec` to its result
(`true`), through `Sandboxes` (hardened container options, persistent shell):
  cold  pool_size 0: docker run + shell start + the command
  pool  pool_size 2: a pre-started sandbox taken from the pool + the command
Pool rounds wait until the pool has refilled (the steady state of a router
whose sessions arrive slower than a sandbox starts). Target: pool/cold <= 0.1.

Usage: python benchmarks/shell_pool.py [--sessions 10] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from _results import add_smoke_flag, row, write_results

from backends.shell.sandboxes import Sandboxes
from router.config import ShellConfig


async def first_command_latencies(pool_size: int, sessions: int) -> list[float]:
    sandboxes = await Sandboxes(ShellConfig(pool_size=pool_size)).start()
    samples = []
    try:
        for n in range(sessions):
            await sandboxes.wait_ready()
            started = time.perf_counter()
            result = await sandboxes.exec(f"bench-{pool_size}-{n}", "true", timeout_s=30)
            samples.append(time.perf_counter() - started)
            assert result.exit_code == 0, result.text()
            await sandboxes.close_session(f"bench-{pool_size}-{n}")
    finally:
        await sandboxes.aclose()
    return samples


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10)
    add_smoke_flag(parser)
    options = parser.parse_args()
    if options.smoke:
        options.sessions = 1
    cold = await first_command_latencies(0, options.sessions)
    pooled = await first_command_latencies(2, options.sessions)
    cold_ms, pool_ms = statistics.median(cold) * 1000, statistics.median(pooled) * 1000
    print(f"new session, first command `true` (median of {options.sessions}):")
    print(f"  cold docker run + shell   {cold_ms:8.1f} ms")
    print(f"  from the warm pool        {pool_ms:8.1f} ms")
    print(f"  pool / cold               {pool_ms / cold_ms:8.3f}   (target <= 0.1)")
    if not options.smoke:
        write_results(
            __file__,
            "A new shell session: from the warm pool against a cold docker run",
            [
                row("first command, cold docker run + shell", cold_ms, "ms", better="lower"),
                row("first command, from the warm pool", pool_ms, "ms", better="lower"),
                row(
                    "pool / cold",
                    pool_ms / cold_ms,
                    "ratio",
                    baseline="a cold docker run + shell start (pool_size 0)",
                    target="<= 0.1",
                    better="lower",
                ),
            ],
        )


if __name__ == "__main__":
    asyncio.run(main())
