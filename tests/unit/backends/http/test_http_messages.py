"""HTTP requests as calls, responses as observations, bodies within limits."""

import base64
import hashlib

import pytest

from backends.http.messages import (
    BodyCapture,
    HttpSettings,
    encode_body,
    error_structured,
    make_call,
    observation_of,
    parse_response,
    render_request,
    response_parts,
    response_record,
)
from calls import Observation, Provenance
from policies.rules import parse_rule


def call(
    method="POST",
    url="http://API.example.com/v1/items?b=2&a=1",
    headers=(("Content-Type", "application/json"), ("Authorization", "secret")),
    body=b'{"name": "x"}',
):
    return make_call(method=method, url=url, headers=headers, body=body, session_id="s", settings=HttpSettings())


def test_a_request_becomes_a_call_with_selected_headers_and_a_json_body():
    c = call()
    assert (c.channel, c.server, c.tool) == ("http", "api.example.com", "POST")
    assert c.arguments == {
        "method": "POST",
        "url": "http://api.example.com/v1/items?a=1&b=2",
        "path": "/v1/items",
        "query": {"a": "1", "b": "2"},
        "headers": {"content-type": "application/json"},
        "body": {"name": "x"},
    }
    assert "authorization" not in c.arguments["headers"]  # only record_headers go into a call
    assert render_request(c).startswith(
        "POST /v1/items?a=1&b=2 HTTP/1.1\nHost: api.example.com\nContent-Type: application/json\n\n{"
    )


def test_rules_match_http_calls_by_host_method_and_path():
    rule = parse_rule(
        {
            "match": {"channel": "http", "server": "*.example.com", "tool": "POST", "arguments": {"path": "/v1/*"}},
            "route": "sim",
        }
    )
    assert rule.matches(call())
    assert not rule.matches(call(method="GET", body=b""))
    assert not rule.matches(call(url="http://api.example.com/v2/items"))


def test_non_default_port_is_part_of_the_server_and_binary_request_bodies_are_base64():
    c = call(
        url="http://127.0.0.1:8081/x", headers=(("Content-Type", "application/octet-stream"),), body=b"\xff\x00\xfe"
    )
    assert c.server == "127.0.0.1:8081"
    assert c.arguments["body"] == {"base64": base64.b64encode(b"\xff\x00\xfe").decode()}


def test_long_request_bodies_are_kept_apart_by_their_digest():
    settings = HttpSettings(max_body_bytes=10)
    a, b = (
        make_call(
            method="POST",
            url="http://h/",
            headers=[("Content-Type", "text/plain")],
            body=b"x" * 20 + end,
            session_id="s",
            settings=settings,
        )
        for end in (b"a", b"b")
    )
    assert a.arguments["body"]["size"] == 21 and a.arguments["body"]["text"].startswith("x" * 10)
    assert a.arguments["body"]["sha256"] != b.arguments["body"]["sha256"]


def test_bodies_text_binary_truncated_with_marker_or_by_digest():
    assert encode_body(b"hello", limit=10) == {
        "body_size": 5,
        "truncated": False,
        "body": "hello",
        "body_encoding": "text",
    }
    binary = bytes(range(256))
    encoded = encode_body(binary, limit=1000)
    assert encoded["body_encoding"] == "base64" and base64.b64decode(encoded["body"]) == binary
    long_text = encode_body(b"a" * 100, limit=10)
    assert long_text["truncated"] and long_text["body"].startswith(
        "a" * 10 + "\n[simroute: body truncated, 10 of 100 bytes"
    )
    assert long_text["body_sha256"] == hashlib.sha256(b"a" * 100).hexdigest()
    big_binary = encode_body(binary * 4, limit=100)
    assert (
        big_binary["body"] is None
        and big_binary["body_size"] == 1024
        and big_binary["body_sha256"] == hashlib.sha256(binary * 4).hexdigest()
    )
    # a cut inside a multi-byte character keeps the text
    assert encode_body("é".encode() * 10, limit=5)["body"].startswith("éé\n[simroute")


def test_capture_passes_chunks_through_and_keeps_the_first_bytes():
    capture = BodyCapture(limit=5)
    assert [capture(b"abc"), capture(b"defg"), capture(b"")] == [b"abc", b"defg", b""]
    assert capture.data == b"abcde" and capture.size == 7 and capture.sha256 == hashlib.sha256(b"abcdefg").hexdigest()


def test_responses_round_trip_and_hop_by_hop_headers_are_dropped():
    structured = response_record(
        201,
        "Created",
        [("Content-Type", "application/json"), ("Transfer-Encoding", "chunked"), ("X-Simroute-Route", "real")],
        encode_body(b'{"id": 7}', limit=100),
        decoded=False,
    )
    observation = observation_of(structured, Provenance.REAL)
    assert observation.text == 'HTTP/1.1 201 Created\nContent-Type: application/json\n\n{"id": 7}'
    assert parse_response(observation.text) == structured
    assert not observation.is_error and observation_of(error_structured(404, "no"), Provenance.REAL).is_error
    assert response_parts(observation, fallback_status=502) == (
        201,
        "Created",
        [("Content-Type", "application/json")],
        b'{"id": 7}',
    )


def test_observations_without_http_form_become_json_errors():
    status, _, headers, body = response_parts(Observation.error("simroute denied this call"), fallback_status=403)
    assert status == 403 and ("Content-Type", "application/json") in headers and b"simroute denied" in body


@pytest.mark.parametrize("text", ["just a body", "HTTP/1.1 abc OK\n\n", "HTTP/1.1 200 OK\nnot a header\n\n"])
def test_malformed_responses_are_rejected(text):
    with pytest.raises(ValueError):
        parse_response(text)
