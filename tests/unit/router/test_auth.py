import base64

import pytest

from router.auth import AuthConfigError, Tokens, check_bind, configured_tokens, namespaced, short_id
from router.http.access import ProxyGate, Refused, SessionCredentials

TOKEN = "a-token-of-enough-length"


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_tokens_from_config_and_environment():
    tokens = configured_tokens({"ci": "ci-token-0123456789"}, {"SIMROUTE_TOKEN": TOKEN})
    assert (
        tokens.name_of(TOKEN) == "default"
        and tokens.name_of("ci-token-0123456789") == "ci"
        and tokens.name_of("nope") is None
    )
    assert tokens.bearer(f"Bearer {TOKEN}") == "default" and tokens.bearer(f"Basic {TOKEN}") is None
    with pytest.raises(AuthConfigError, match="shorter"):
        configured_tokens({}, {"SIMROUTE_TOKEN": "short"})


def test_binds_beyond_loopback_need_a_token():
    none = Tokens.of({})
    check_bind("127.0.0.1", none, what="x")
    check_bind("::1", none, what="x")
    check_bind("localhost", none, what="x")
    with pytest.raises(AuthConfigError, match="SIMROUTE_TOKEN"):
        check_bind("0.0.0.0", none, what="the MCP endpoint")
    check_bind("0.0.0.0", Tokens.of({"a": TOKEN}), what="x")


def test_namespaces_and_short_ids():
    assert namespaced(None, "s") == "s" and namespaced("alice", "s") == "alice/s"
    assert "alice/shared-session" not in short_id("alice/shared-session")


def test_proxy_gate_without_tokens_keeps_the_old_sessions():
    gate = ProxyGate(session_header="X-Simroute-Session", tokens=Tokens.of({}))
    assert gate.session_of("c1", {"Proxy-Authorization": basic("carol", "")}) == "carol"
    assert gate.session_of("c1", {}) == "http-c1"


def test_proxy_gate_with_tokens_namespaces_and_challenges():
    gate = ProxyGate(session_header="X-Simroute-Session", tokens=Tokens.of({"alice": TOKEN}))
    assert gate.session_of("c1", {"Proxy-Authorization": basic("agent", TOKEN)}) == "alice/agent"
    with pytest.raises(Refused) as refused:
        gate.session_of("c1", {})
    assert refused.value.status == 407 and refused.value.record
    with pytest.raises(Refused):
        gate.session_of("c1", {"Proxy-Authorization": basic("agent", "wrong")})
    gate.connect("c2", {"Proxy-Authorization": basic("tunnelled", TOKEN)})
    assert gate.session_of("c2", {}) == "alice/tunnelled"  # requests inside the tunnel
    assert gate.session_of("c2", {"X-Simroute-Session": "named"}) == "alice/named"


def test_browser_gate_knows_contexts_by_credential():
    credentials = SessionCredentials()
    gate = ProxyGate(session_header="X-Simroute-Session", tokens=Tokens.of({}), browser=credentials)
    credential = credentials.issue("alice/s1")
    assert (
        gate.session_of("c1", {"Proxy-Authorization": basic(credential["username"], credential["password"])})
        == "alice/s1"
    )
    with pytest.raises(Refused) as handshake:
        gate.session_of("c2", {})
    assert not handshake.value.record  # the challenge Chromium answers, not a refusal
    credentials.revoke(credential)
    with pytest.raises(Refused) as revoked:
        gate.session_of("c3", {"Proxy-Authorization": basic(credential["username"], credential["password"])})
    assert revoked.value.record
