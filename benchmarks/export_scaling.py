"""`simroute export` as the store grows: records exported a second and the export
process's peak resident memory at 20,000 and 200,000 records (with --million, also
1,000,000), on SQLite and on Redis (a real redis-server started here). Each store
is grown in place between exports; `simroute export` runs in its own process, as a
user runs it, writing all three formats. Target: the largest store's peak memory
within 25 MB of the smallest's (it streams: memory stays flat as the store grows).

With --smoke: stores of 500 and 2,000 records.

Run: .venv/bin/python benchmarks/export_scaling.py [--million] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from _results import add_smoke_flag, row, write_results  # noqa: E402
from kit.export import export_at_sizes  # noqa: E402
from kit.redis import RedisServer  # noqa: E402

FLAT_MB = 25


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--million", action="store_true", help="grow each store on to 1,000,000 records")
    add_smoke_flag(parser)
    options = parser.parse_args()
    sizes = [500, 2_000] if options.smoke else [20_000, 200_000] + ([1_000_000] if options.million else [])
    rows = []
    print(f"{'store':>7} {'records':>10} {'seconds':>9} {'records/s':>10} {'peak RSS MB':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server = RedisServer(folder).start()
        try:
            for kind in ("sqlite", "redis"):
                figures = await export_at_sizes(kind, folder / kind, sizes, redis_url=server.url)
                for figure in figures:
                    print(f"{kind:>7} {figure['records']:>10,} {figure['seconds']:9.1f} {figure['rate']:10.0f} {figure['peak_mb']:12.1f}")
                    rows.append(row(f"{kind}: export rate, {figure['records']:,} records", figure["rate"], "records/s", better="higher"))
                    rows.append(row(f"{kind}: peak RSS, {figure['records']:,} records", figure["peak_mb"], "MB", better="lower"))
                growth = figures[-1]["peak_mb"] - figures[0]["peak_mb"]
                print(f"{kind:>7}: peak RSS grew {growth:+.1f} MB from {sizes[0]:,} to {sizes[-1]:,} records (target < {FLAT_MB})")
                rows.append(
                    row(
                        f"{kind}: peak RSS growth, {sizes[0]:,} to {sizes[-1]:,} records",
                        growth,
                        "MB",
                        baseline=f"the export of {sizes[0]:,} records",
                        target=f"< {FLAT_MB}",
                        better="lower",
                    )
                )
        finally:
            server.kill()
    if not options.smoke:
        write_results(__file__, "simroute export as the store grows: rate and peak memory", rows)


if __name__ == "__main__":
    asyncio.run(main())
