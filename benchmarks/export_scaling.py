"""`simroute export` as the store grows: records exported a second and the export
process's peak resident memory at 20,000 and 200,000 records (with --million, also
1,000,000), on SQLite and on Redis (a real redis-server started here), each size
exported twice: in session order and with --hardest-first. Each store is grown in
place between exports; `simroute export` runs in its own process, as a user runs it,
writing all three formats. Target: the largest store's peak memory within 25 MB of
the smallest's, in either order (it streams: memory stays flat as the store grows).

With --smoke: stores of 500 and 2,000 records. --stores sqlite (or redis) measures one
store, and writes its own results file (export_scaling-redis.json).

Run: .venv/bin/python benchmarks/export_scaling.py [--million] [--stores sqlite,redis] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from _results import add_smoke_flag, row, write_results  # noqa: E402
from kit.export import export_at_sizes  # noqa: E402
from kit.redis import RedisServer  # noqa: E402

FLAT_MB = 25
# Each size is exported in both orders: as read, and --hardest-first (its lines spooled to
# a scratch file and sorted there: memory has to stay flat all the same).
ORDERS = ("session", "hardest-first")
STORES = ("sqlite", "redis")
LABELS = {"session": "", "hardest-first": " --hardest-first"}


def printed(kind: str, figure: dict) -> None:
    """One export's figures, as soon as measured (a million-record run takes a while)."""
    order, records = figure["order"], figure["records"]
    print(
        f"{kind:>7} {order:>14} {records:>10,} {figure['seconds']:9.1f} {figure['rate']:10.0f} "
        f"{figure['peak_mb']:12.1f}",
        flush=True,
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--million", action="store_true", help="grow each store on to 1,000,000 records")
    parser.add_argument(
        "--stores", default=",".join(STORES), help="the stores measured, comma-separated (default: sqlite,redis)"
    )
    add_smoke_flag(parser)
    options = parser.parse_args()
    sizes = [500, 2_000] if options.smoke else [20_000, 200_000] + ([1_000_000] if options.million else [])
    kinds = [kind for kind in options.stores.split(",") if kind]
    if not kinds or set(kinds) - set(STORES):
        parser.error(f"--stores: sqlite and/or redis, got {options.stores!r}")
    # A run of one store writes its own results file: it does not replace a run of both.
    part = None if set(kinds) == set(STORES) else "-".join(kinds)
    rows = []
    print(
        f"{'store':>7} {'order':>14} {'records':>10} {'seconds':>9} {'records/s':>10} {'peak RSS MB':>12}", flush=True
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server = RedisServer(folder).start()
        try:
            for kind in kinds:
                figures = await export_at_sizes(
                    kind,
                    folder / kind,
                    sizes,
                    redis_url=server.url,
                    orders=ORDERS,
                    measured=functools.partial(printed, kind),
                )
                for figure in figures:
                    order, records = figure["order"], figure["records"]
                    label = f"{kind}{LABELS[order]}"
                    rows.append(
                        row(f"{label}: export rate, {records:,} records", figure["rate"], "records/s", better="higher")
                    )
                    rows.append(row(f"{label}: peak RSS, {records:,} records", figure["peak_mb"], "MB", better="lower"))
                for order in ORDERS:
                    peaks = [figure["peak_mb"] for figure in figures if figure["order"] == order]
                    growth = peaks[-1] - peaks[0]
                    label = f"{kind}{LABELS[order]}"
                    print(
                        f"{label}: peak RSS grew {growth:+.1f} MB from "
                        f"{sizes[0]:,} to {sizes[-1]:,} records (target < {FLAT_MB})"
                    )
                    rows.append(
                        row(
                            f"{label}: peak RSS growth, {sizes[0]:,} to {sizes[-1]:,} records",
                            growth,
                            "MB",
                            baseline=f"the export of {sizes[0]:,} records",
                            target=f"< {FLAT_MB}",
                            better="lower",
                        )
                    )
                if not options.smoke:
                    # After each store: a long run stopped during the next one keeps what it measured.
                    write_results(__file__, "simroute export as the store grows: rate and peak memory", rows, part=part)
        finally:
            server.kill()


if __name__ == "__main__":
    asyncio.run(main())
