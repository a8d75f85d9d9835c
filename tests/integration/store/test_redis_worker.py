"""Shadow work through Redis: routers queue it, `simroute worker` processes do it,
and a worker that dies mid-job has its job claimed by another. Real redis-server,
the bundled GGUF world model, mcp-server-time."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
import redis
from kit.launch import meta_of, model_path, records_of, simroute_executable, stdio_client, time_server
from kit.llama_server import llama_cpp_server
from kit.redis import RedisServer

from router.cli.launch import free_port

pytestmark = pytest.mark.integration

WORLD_MODEL = {"max_tokens": 96, "deadline_s": 120}


def start_worker(config, log):
    return subprocess.Popen(
        [simroute_executable(), "worker", "--config", str(config)], stdout=log.open("w"), stderr=subprocess.STDOUT
    )


def wait_until(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except redis.ResponseError:  # the worker has not made its group yet
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


async def test_workers_complete_shadow_work_and_claim_a_dead_workers_job(make_config, redis_server, tmp_path):
    config = make_config(
        mcpServers={"time": time_server()},
        mode="shadow",
        world_model=WORLD_MODEL,
        store={"url": redis_server.url},
        shadow={"claim_after_s": 2},
    )
    async with stdio_client(config) as client:
        served = await client.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})
        assert meta_of(served)["provenance"] == "real"
    [pending] = records_of(config)
    assert pending["status"] == "pending" and pending["shadow"] is None  # no worker yet: queued, not lost
    queue = redis.Redis(host="127.0.0.1", port=redis_server.port, decode_responses=True)
    assert queue.xlen("simroute:shadow") == 1

    first = start_worker(config, tmp_path / "worker-1.log")
    try:  # the first worker takes the job, then dies holding it
        wait_until(
            lambda: queue.xpending("simroute:shadow", "shadow-workers")["pending"] == 1,
            60,
            "the first worker to take the job",
        )
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    finally:
        first.kill()
    assert records_of(config)[0]["status"] == "pending"

    second = start_worker(config, tmp_path / "worker-2.log")
    try:
        wait_until(
            lambda: records_of(config)[0]["status"] == "complete",
            180,
            "the second worker to claim and complete the job",
        )
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0
    [done] = records_of(config)
    assert done["shadow"]["provenance"] == "sim" and done["divergence"] is not None
    assert queue.xlen("simroute:shadow") == 0  # acknowledged and removed


async def test_shadow_work_waits_while_the_world_model_is_down_and_completes_once_it_is_up(
    make_config, redis_server, tmp_path
):
    """A model server that is down is not the model's answer: the worker holds the job,
    the record stays pending, and once the server answers the work completes."""
    port = free_port()
    config = make_config(
        mcpServers={"time": time_server()},
        mode="shadow",
        world_model={"engine": "openai", "url": f"http://127.0.0.1:{port}/v1", **WORLD_MODEL},
        store={"url": redis_server.url},
    )
    async with stdio_client(config) as client:
        assert meta_of(await client.call_tool("get_current_time", {"timezone": "Asia/Tokyo"}))["provenance"] == "real"
    queue = redis.Redis(host="127.0.0.1", port=redis_server.port, decode_responses=True)
    log = tmp_path / "worker.log"
    worker = start_worker(config, log)
    try:
        wait_until(lambda: "waits for the world model" in log.read_text(), 60, "the worker to find the model down")
        time.sleep(6)  # past a retry (every 5 s): still held, still pending, not completed with an error
        [held] = records_of(config)
        assert held["status"] == "pending" and held["shadow"] is None, held
        assert queue.xpending("simroute:shadow", "shadow-workers")["pending"] == 1
        with llama_cpp_server(model_path(), n_ctx=2048, port=port):
            wait_until(
                lambda: records_of(config)[0]["status"] == "complete",
                180,
                "the held work to complete once the model is up",
            )
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(30) == 0
    [done] = records_of(config)
    assert done["shadow"]["provenance"] == "sim" and not done["shadow"]["is_error"], done["shadow"]
    assert done["divergence"] is not None
    assert queue.xlen("simroute:shadow") == 0
    assert "world model answers again" in log.read_text()


async def test_the_worker_waits_out_redis_going_away_and_goes_on(make_config, tmp_path):
    """Redis killed and restarted under a running worker: the worker neither exits nor
    stops consuming; work queued after the restart completes."""
    server = RedisServer(tmp_path, persistent=True).start()
    config = make_config(
        mcpServers={"time": time_server()}, mode="shadow", world_model=WORLD_MODEL, store={"url": server.url}
    )
    log = tmp_path / "worker.log"
    worker = start_worker(config, log)
    try:
        wait_until(lambda: "consuming" in log.read_text(), 60, "the worker to start")
        server.kill()
        wait_until(lambda: "waits for Redis" in log.read_text(), 30, "the worker to find Redis gone")
        assert worker.poll() is None
        server.start()
        async with stdio_client(config) as client:
            assert (
                meta_of(await client.call_tool("get_current_time", {"timezone": "Asia/Tokyo"}))["provenance"] == "real"
            )
        wait_until(
            lambda: records_of(config)[0]["status"] == "complete",
            180,
            "the worker to complete work queued after the restart",
        )
        assert "Redis answers again" in log.read_text()
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            assert worker.wait(30) == 0
        finally:
            server.kill()
