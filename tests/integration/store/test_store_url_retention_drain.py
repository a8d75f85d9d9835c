"""The store as a user configures it: `store.url: sqlite:///…` puts the records where
the URL says; `store.max_age` with `simroute prune` drops old records in SQLite and
Redis but never a named recording; the Redis log stream keeps to `store.max_log`; and
`simroute drain` completes shadow work left pending in a Redis store."""

from __future__ import annotations

import subprocess
import time

import pytest
import redis
from kit.launch import meta_of, records_of, simroute_executable, stdio_client, time_server, toolbox_server, write_config

pytestmark = pytest.mark.integration


async def echo(config, *texts: str) -> None:
    async with stdio_client(config) as client:
        for text in texts:
            result = await client.call_tool("echo", {"text": text})
            assert meta_of(result)["provenance"] == "real"


async def test_a_relative_sqlite_url_writes_the_records_beside_the_config(tmp_path):
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()}, store={"url": "sqlite:///data/kept.db"})
    await echo(config, "hello")
    assert (tmp_path / "data" / "kept.db").is_file()  # relative to the config's folder
    assert not (tmp_path / "records.db").exists() and not (tmp_path / ".simroute" / "records.db").exists()
    assert [(r["tool"], r["arguments"]) for r in records_of(config)] == [("echo", {"text": "hello"})]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    absolute = write_config(
        elsewhere, mcpServers={"toolbox": toolbox_server()}, store={"url": f"sqlite:///{tmp_path}/abs.db"}
    )
    assert f"sqlite:///{tmp_path}".startswith("sqlite:////")  # four slashes: an absolute path
    await echo(absolute, "there")
    assert (tmp_path / "abs.db").is_file() and not (elsewhere / "data").exists()
    assert [r["arguments"]["text"] for r in records_of(absolute)] == ["there"]


@pytest.mark.serial
@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_simroute_prune_drops_records_past_max_age_but_never_a_named_recording(tmp_path, request, kind):
    store = (
        {"url": request.getfixturevalue("redis_server").url}
        if kind == "redis"
        else {"path": str(tmp_path / "records.db")}
    )
    upstream = {"toolbox": toolbox_server()}
    await echo(write_config(tmp_path, mcpServers=upstream, store=store, replay={"recording": "golden"}), "named")
    await echo(write_config(tmp_path, mcpServers=upstream, store=store), "old")
    gap_opened = time.time()
    time.sleep(8)
    config = write_config(tmp_path, mcpServers=upstream, store=store)
    await echo(config, "fresh")
    assert sorted(r["arguments"]["text"] for r in records_of(config)) == ["fresh", "named", "old"]

    # The cut-off (prune's own clock minus max_age) must fall inside the 8-second gap however
    # slow the machine was: aim 2 s into it, leaving 5 s for `simroute prune` to start.
    max_age_s = int(time.time() - (gap_opened + 2))
    config = write_config(tmp_path, mcpServers=upstream, store={**store, "max_age": f"{max_age_s}s"})
    pruned = subprocess.run(
        [simroute_executable(), "prune", "--config", str(config)], capture_output=True, text=True, timeout=120
    )
    assert pruned.returncode == 0 and "pruned 1 record(s)" in pruned.stdout, pruned.stdout + pruned.stderr
    # "old" went; the named recording is older still and stays; "fresh" is within max_age.
    assert sorted(r["arguments"]["text"] for r in records_of(config)) == ["fresh", "named"]


async def test_the_redis_log_stream_keeps_to_store_max_log(tmp_path, redis_server):
    from kit.dashboard import fill

    from router.config import load_config

    config = load_config(write_config(tmp_path, store={"url": redis_server.url, "max_log": 10}))
    store = await config.open_store().open()
    try:
        await fill(store, 600, now=time.time(), span_s=600, batch=50)
        assert await store.count() == 602  # the records themselves stay (retention is max_age/max_records)
    finally:
        await store.aclose()
    log = redis.Redis(host="127.0.0.1", port=redis_server.port).xlen("simroute:log")
    # XADD MAXLEN ~ trims whole stream nodes (100 entries by default): near the cap, far below 602.
    assert log <= 10 + 100 + 1, log


async def test_simroute_drain_completes_pending_shadow_work_in_a_redis_store(make_config, redis_server):
    config = make_config(
        mcpServers={"time": time_server()},
        mode="shadow",
        world_model={"max_tokens": 96, "deadline_s": 120},
        store={"url": redis_server.url},
    )
    async with stdio_client(config) as client:
        served = await client.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})
    assert meta_of(served)["provenance"] == "real"
    [pending] = records_of(config)
    assert pending["status"] == "pending" and pending["shadow"] is None  # queued for a worker; none runs
    queue = redis.Redis(host="127.0.0.1", port=redis_server.port)
    assert queue.xlen("simroute:shadow") == 1

    out = subprocess.run(
        [simroute_executable(), "drain", "--config", str(config)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0 and "completed 1 pending shadow record(s)" in out.stdout, out.stdout + out.stderr
    [done] = records_of(config)
    assert done["status"] == "complete" and done["id"] == pending["id"]
    assert done["shadow"]["provenance"] == "sim" and 0.0 <= done["divergence"] <= 1.0
    assert queue.xlen("simroute:shadow") == 0  # the job acknowledged and removed: no worker will redo it
