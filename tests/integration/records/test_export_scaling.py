"""An export streams: its resident memory is flat from 5,000 to 50,000 records,
on SQLite and on a real redis-server (`simroute export` measured in its own process;
benchmarks/export_scaling.py prints the same figures and runs to a million)."""

from __future__ import annotations

import pytest
from kit.export import export_at_sizes

pytestmark = [pytest.mark.integration, pytest.mark.serial]  # a memory and time measurement: alone

SIZES = [5_000, 50_000]
FLAT_MB = 25  # ten times the records may cost this much more resident memory, no more


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_resident_memory_is_flat_from_5k_to_50k_records(kind, tmp_path, redis_server):
    small, large = await export_at_sizes(kind, tmp_path / kind, SIZES, redis_url=redis_server.url)
    print(
        f"{kind}: {small['peak_mb']:.0f} MB at {small['records']:,} records, "
        f"{large['peak_mb']:.0f} MB at {large['records']:,}"
    )
    assert large["peak_mb"] - small["peak_mb"] < FLAT_MB
    lines = large["card"]["counts"]["lines"]["messages"]
    assert lines["train"] + lines["test"] > 0.8 * SIZES[-1]  # the whole store was exported, not a part of it
