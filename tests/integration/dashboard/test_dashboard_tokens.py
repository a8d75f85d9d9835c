"""A token's dashboard and /metrics on `simroute serve` show only its own records and
the shared namespaces': bob never reads alice's records, her record by id, her
tools' counts or her `namespace` series; an operator token sees every namespace."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from kit.launch import records_of, toolbox_server, write_config
from kit.serve import parsed, serving

pytestmark = pytest.mark.integration

TOKENS = {
    "alice": "alice-token-0123456789abcdef",
    "bob": "bob-token-0123456789abcdef00",
    "ci": "ci-token-0123456789abcdef00000",
    "ops": "ops-token-0123456789abcdef000",
}


async def call(port: int, token: str, session: str, tool: str) -> None:
    headers = {"Authorization": f"Bearer {TOKENS[token]}", "X-Simroute-Session": session}
    async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp", headers=headers)) as client:
        await client.call_tool(tool, {"text": "hi"} if tool == "echo" else {})


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[token]}"}


def call_series(metrics: str) -> dict[str, float]:
    """simroute_calls_total by namespace."""
    out: dict[str, float] = {}
    for (name, labels), value in parsed(metrics).items():
        if name == "simroute_calls_total":
            namespace = dict(labels)["namespace"]
            out[namespace] = out.get(namespace, 0) + value
    return out


async def test_a_tokens_dashboard_and_metrics_show_its_own_namespace_and_the_shared_ones(tmp_path: Path):
    service = {"tokens": TOKENS, "shared_namespaces": ["ci"], "operator_tokens": ["ops"]}
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()}, service=service)
    with serving(config, tmp_path / "serve.log") as port:
        await call(port, "alice", "a1", "get_motto")
        await call(port, "alice", "a2", "get_motto")
        await call(port, "bob", "b1", "echo")
        await call(port, "ci", "golden", "echo")
        rows = records_of(config)
        alices = [row["id"] for row in rows if row["session"].startswith("alice/")]
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            bob_records = (await http.get("/dashboard/api/records", headers=bearer("bob"))).json()["rows"]
            bob_alices_record = (
                await http.get("/dashboard/api/record", params={"id": alices[0]}, headers=bearer("bob"))
            ).json()
            bob_fidelity = (await http.get("/dashboard/api/fidelity", headers=bearer("bob"))).json()["rows"]
            bob_overview = (await http.get("/dashboard/api/overview", headers=bearer("bob"))).json()["rows"]
            alice_record = (
                await http.get("/dashboard/api/record", params={"id": alices[0]}, headers=bearer("alice"))
            ).json()
            bob_metrics = (await http.get("/metrics", headers=bearer("bob"))).text
            ops_records = (await http.get("/dashboard/api/records", headers=bearer("ops"))).json()["rows"]
            ops_metrics = (await http.get("/metrics", headers=bearer("ops"))).text
    assert len(rows) == 4
    assert sorted(row["session"] for row in bob_records) == ["bob/b1", "ci/golden"]
    assert bob_alices_record["record"] is None and alice_record["record"]["id"] == alices[0]
    assert [(row["tool"], row["calls"]) for row in bob_fidelity] == [("echo", 2)]  # none of alice's get_motto
    assert sum(row["calls"] for row in bob_overview) == 2
    assert call_series(bob_metrics) == {"bob": 1.0, "ci": 1.0}
    assert "simroute_store_records" not in bob_metrics  # the store's totals count every token's records
    assert sorted(row["session"] for row in ops_records) == ["alice/a1", "alice/a2", "bob/b1", "ci/golden"]
    assert call_series(ops_metrics) == {"alice": 2.0, "bob": 1.0, "ci": 1.0}
    assert parsed(ops_metrics)[("simroute_store_records", ())] == 4.0
