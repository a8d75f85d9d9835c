"""An episode's HTTP requests go through simroute's HTTP channel: routed, recorded in
the episode's session and answered as an agent's proxied request is — with tokens on
too, where the episode's own credential names its session."""

from __future__ import annotations

import httpx2 as httpx
import pytest
from kit.episodes import serving_episodes, text_of
from kit.http import http_config
from kit.launch import records_of, toolbox_server
from servers.http_upstream import serve_upstream

pytestmark = pytest.mark.integration

TOKEN = "episode-test-token-0123456789abcdef"


def test_an_episodes_http_requests_are_routed_and_recorded_in_its_session(tmp_path):
    config = http_config(tmp_path, mcpServers={"toolbox": toolbox_server()})
    with serve_upstream() as upstream, serving_episodes(config, SIMROUTE_TOKEN=TOKEN) as served:
        served.http.headers["authorization"] = f"Bearer {TOKEN}"
        episode = served.open(options={"route": "real", "channels": ["http"]})
        tools = served.step(episode, {"type": "list_tools"})["observation"]["tools"]
        assert [tool["name"] for tool in tools] == ["http_request"]  # the episode's channels only
        answer = served.call(episode, "http_request", method="GET", url=f"{upstream}/json")
        result = answer["observation"]["result"]
        assert (
            result["structuredContent"]["status"] == 200 and '"items": [1, 2, 3]' in result["structuredContent"]["body"]
        )
        assert (
            answer["info"]["provenance"] == "real" and answer["info"]["route"] == "real" and answer["info"]["record_id"]
        )

        denied = served.open(options={"route": "deny", "channels": ["http"]})
        refused = served.call(denied, "http_request", method="GET", url=f"{upstream}/json")
        assert refused["observation"]["result"]["isError"] is True and refused["info"]["provenance"] == "none"
        assert refused["info"]["infra_error"] is False  # a denial is the policy's answer, not a failure
        assert "denied" in text_of(refused)

        bad = served.call(episode, "http_request", method="GET", url="ftp://example.org/")
        assert bad["observation"]["result"]["isError"] is True and "absolute http(s) 'url'" in text_of(bad)

        unauthenticated = httpx.post(f"{served.url}/episodes", json={}, timeout=10, trust_env=False)
        assert unauthenticated.status_code == 401  # the episodes' front doors share the endpoint's tokens

    rows = records_of(config, "--channel", "http")
    assert [(r["session"], r["route"]) for r in rows] == [
        (f"default/episode-{episode}", "real"),
        (f"default/episode-{denied}", "deny"),
    ]
