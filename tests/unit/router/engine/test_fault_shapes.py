"""Perturbed answers in each channel's own shape."""

import json

from kit.calls import make_call

from backends.http.messages import observation_of, response_parts
from calls import Observation, Perturbation, Provenance, Turn
from router.addons.perturbation.fault_shapes import fault_observation, shaped_observation


def fault(kind, **fields):
    return Perturbation(kind=kind, rule="p:r", seed=1, n=1, **fields)


def test_http_rate_limit_is_a_429_with_retry_after_and_the_buckets_headers():
    observation = fault_observation(
        make_call("GET", channel="http"), fault("rate_limit", retry_after_s=2.4, limit=5), []
    )
    status, _, headers, body = response_parts(observation, fallback_status=500)
    assert status == 429 and ("Retry-After", "2") in headers and ("X-RateLimit-Remaining", "0") in headers
    assert json.loads(body)["error"]["code"] == 429 and observation.provenance is Provenance.NONE


def test_http_error_and_timeout_statuses():
    error = fault_observation(make_call("GET", channel="http"), fault("error", status=500), [])
    assert response_parts(error, fallback_status=0)[0] == 500 and "Retry-After" not in error.text
    unavailable = fault_observation(make_call("GET", channel="http"), fault("error", status=503, retry_after_s=1.0), [])
    assert "Retry-After: 1" in unavailable.text
    assert (
        response_parts(fault_observation(make_call("GET", channel="http"), fault("timeout"), []), fallback_status=0)[0]
        == 504
    )


def test_a_shell_error_is_a_non_zero_exit_with_stderr_in_the_last_working_directory():
    earlier = Turn(
        make_call("shell_exec", channel="shell"),
        Observation([], Provenance.REAL, structured={"output": "", "cwd": "/workspace/src"}),
    )
    call = make_call("shell_exec", {"command": "make build"}, channel="shell")
    observation = fault_observation(call, fault("error", exit_code=2), [earlier])
    assert observation.structured["exit_code"] == 2 and observation.structured["cwd"] == "/workspace/src"
    assert "make: Resource temporarily unavailable" in observation.text and "exit code 2" in observation.text
    blank = fault_observation(make_call("shell_exec", {"command": " "}, channel="shell"), fault("error"), [])
    assert "bash: Resource temporarily unavailable" in blank.text
    timed_out = fault_observation(call, fault("timeout"), [])
    assert timed_out.structured["timed_out"] is True and timed_out.is_error


def test_a_browser_fault_is_a_navigation_error():
    call = make_call("browser_navigate", {"url": "https://example.com/"}, channel="browser")
    observation = fault_observation(call, fault("error"), [])
    assert observation.is_error and "net::ERR_CONNECTION_RESET at https://example.com/" in observation.text


def test_empty_and_truncate_keep_the_channels_shape():
    structured = {
        "status": 200,
        "reason": "OK",
        "headers": [["Content-Type", "application/json"]],
        "body": '{"items": [1, 2, 3, 4]}',
        "body_encoding": "text",
    }
    answer = observation_of(structured, Provenance.REAL)
    cut = shaped_observation(make_call("GET", channel="http"), fault("truncate", keep=0.5), answer)
    assert json.loads(cut.structured["body"]) == {"items": [1, 2]} and cut.structured["status"] == 200
    shell = Observation(
        [],
        Provenance.REAL,
        structured={"output": "a\nb\nc\nd\n", "exit_code": 0, "cwd": "/w", "timed_out": False, "truncated": False},
    )
    emptied = shaped_observation(make_call("shell_exec", channel="shell"), fault("empty", keep=0.0), shell)
    assert (
        emptied.structured["output"] == ""
        and emptied.structured["exit_code"] == 0
        and emptied.provenance is Provenance.NONE
    )
