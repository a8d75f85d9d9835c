"""/metrics of `simroute serve`, launched as a user launches it, after real MCP calls
through it to the test toolbox server: parsed with prometheus-client's parser."""

from __future__ import annotations

import time
from pathlib import Path

import httpx2 as httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import toolbox_server, write_config
from kit.serve import parsed, scrape_around_a_call, serving

from router.config.world_model import DEFAULT_MODEL_PATH

pytestmark = pytest.mark.integration


async def test_metrics_of_serve_count_the_calls_made(tmp_path: Path):
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()})
    with serving(config, tmp_path / "serve.log") as port:
        async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp")) as client:
            for n in range(3):
                await client.call_tool("echo", {"text": f"hello {n}"})
        async with httpx.AsyncClient(timeout=10) as http:
            text = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
            dashboard_page = await http.get(f"http://127.0.0.1:{port}/dashboard")
    assert dashboard_page.status_code == 200 and "simroute dashboard" in dashboard_page.text
    samples = parsed(text)
    calls = {labels: value for (name, labels), value in samples.items() if name == "simroute_calls_total"}
    assert calls == {(("channel", "mcp"), ("outcome", "complete"), ("provenance", "real"), ("route", "real")): 3.0}
    assert samples[("simroute_call_latency_seconds_count", (("route", "real"),))] == 3.0
    assert samples[("simroute_store_records", ())] == 3.0
    assert samples[("simroute_store_records_by_route", (("route", "real"),))] == 3.0
    assert samples[("simroute_shadow_queue_depth", ())] == 0.0
    assert samples[("simroute_store_errors_total", ())] == 0.0


async def test_with_a_token_serve_asks_for_it_on_the_dashboard_and_metrics_too(tmp_path: Path):
    token = "serve-dashboard-token-0123456789"
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()})
    with serving(config, tmp_path / "serve.log", SIMROUTE_TOKEN=token) as port:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            assert (await http.get("/metrics")).status_code == 401
            assert (await http.get("/dashboard/api/records")).status_code == 401
            assert (await http.get("/dashboard", params={"token": "wrong-token-wrong-token"})).status_code == 401
            assert (await http.get("/metrics", headers={"Authorization": f"Bearer {token}"})).status_code == 200
            traded = await http.get("/dashboard", params={"token": token, "view": "fidelity"})
            assert traded.status_code == 303 and traded.headers["location"] == "/dashboard?view=fidelity"
            assert (
                "httponly" in traded.headers["set-cookie"].lower()
                and "samesite=strict" in traded.headers["set-cookie"].lower()
            )
            assert (await http.get("/dashboard/api/records")).status_code == 200  # the cookie, kept by the client
            # The MCP endpoint still wants its bearer token: the dashboard's cookie is not one.
            mcp = await http.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"accept": "application/json, text/event-stream"},
            )
            assert mcp.status_code == 401


async def test_metrics_count_the_world_models_tokens_and_generation_time(tmp_path: Path):
    """A simulated call through `simroute serve` with the bundled GGUF model: its
    prompt and generated tokens and its generation time, by engine and domain."""
    config = write_config(
        tmp_path,
        mcpServers={"toolbox": toolbox_server()},
        mode="sim",
        world_model={"max_tokens": 64, "deadline_s": 120},
    )
    log = tmp_path / "serve.log"
    with serving(config, log) as port:
        before, result, text = await scrape_around_a_call(port)
    assert result.meta["simroute"]["provenance"] == "sim", log.read_text()
    assert "simroute_world_model_prompt_tokens_total{" not in before  # nothing generated yet
    samples = parsed(text)
    completions = samples[("simroute_world_model_generation_seconds_count", MCP_LLAMA)]
    assert 1 <= completions <= 2  # one answer, or one more after a malformed one
    assert (
        samples[("simroute_world_model_prompt_tokens_total", MCP_LLAMA)] > 50 * completions
    )  # the prompt holds the tool list
    assert 0 < samples[("simroute_world_model_completion_tokens_total", MCP_LLAMA)] <= 64 * completions
    assert (
        0
        < samples[("simroute_world_model_evaluated_tokens_total", MCP_LLAMA)]
        <= samples[("simroute_world_model_prompt_tokens_total", MCP_LLAMA)]
    )
    assert samples[("simroute_world_model_generation_seconds_sum", MCP_LLAMA)] > 0
    sim_calls = [
        value
        for (name, labels), value in samples.items()
        if name == "simroute_calls_total" and ("provenance", "sim") in labels
    ]
    assert sim_calls == [1.0]
    # The model's answer names its source, counted apart; an error made in its place names none.
    sourced = samples.get(
        ("simroute_call_sources_total", (("channel", "mcp"), ("provenance", "sim"), ("sub", "model")))
    )
    assert sourced == (None if result.is_error else 1.0)


async def test_a_known_servers_system_prompt_is_read_before_the_first_call(tmp_path: Path):
    """With the tools of a server known from an earlier run, the world model reads
    its system prompt (task + tool list) when it loads: the process's first simulated
    call evaluates only what follows it (without the read-ahead it evaluates the
    whole prompt)."""
    config = write_config(
        tmp_path,
        mcpServers={"toolbox": toolbox_server()},
        mode="sim",
        world_model={"max_tokens": 64, "deadline_s": 120},
    )
    with serving(config, tmp_path / "first.log") as port:
        async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp")) as client:
            assert await client.list_tools()  # the store keeps the server's tools
    log = tmp_path / "serve.log"
    with serving(config, log) as port:
        deadline = time.monotonic() + 120
        while "read the prompt for 'toolbox' ahead" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        _, result, text = await scrape_around_a_call(port)
    assert result.meta["simroute"]["provenance"] == "sim" and not result.is_error, log.read_text()
    assert result.meta["simroute"]["source"] == {
        "sub": "model",
        "model": Path(DEFAULT_MODEL_PATH).name,
    }  # the GGUF file's name
    samples = parsed(text)
    completions = samples[("simroute_world_model_generation_seconds_count", MCP_LLAMA)]
    prompt = (
        samples[("simroute_world_model_prompt_tokens_total", MCP_LLAMA)] / completions
    )  # each attempt has the same prompt
    evaluated = samples[("simroute_world_model_evaluated_tokens_total", MCP_LLAMA)]
    assert prompt > 100
    assert evaluated < prompt - 32, (evaluated, prompt)  # the system prompt (>= 32 tokens) was not read again


MCP_LLAMA = (("domain", "mcp"), ("engine", "llama"))
