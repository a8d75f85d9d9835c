"""The divergence metric on real/simulated pairs per channel: identical, noise only,
a wrong offset, a wrong status, a missing key, a wrong exit code."""

import json

import pytest

from backends.browser.page_state import PageState
from backends.http.messages import encode_body, observation_of, response_record
from backends.shell.screen import ShellResult
from calls import Observation, Provenance
from shadow.compare.divergence import NO_NOISE, Noise, compare, divergence

REAL, SIM = Provenance.REAL, Provenance.SIM


def mcp(value, *, is_error=False, provenance=REAL):
    text = value if isinstance(value, str) else json.dumps(value, indent=2)
    return Observation(
        [{"type": "text", "text": text}],
        provenance,
        is_error=is_error,
        structured=None if isinstance(value, str) else value,
    )


def http(status, body, *, headers=(), provenance=REAL):
    body = body if isinstance(body, str) else json.dumps(body)
    all_headers = [("Content-Type", "application/json"), *headers]
    return observation_of(
        response_record(status, "", all_headers, encode_body(body.encode(), limit=1 << 20), decoded=False), provenance
    )


def shell(output, exit_code=0, cwd="/workspace", provenance=REAL):
    result = ShellResult(output=output, exit_code=exit_code, cwd=cwd)
    return Observation(
        [{"type": "text", "text": result.text()}], provenance, is_error=result.is_error, structured=result.structured()
    )


def page(url, title, snapshot, error=None, provenance=REAL):
    state = PageState(url=url, title=title, snapshot=snapshot, error=error)
    return Observation(
        [{"type": "text", "text": state.text()}], provenance, is_error=state.is_error, structured=state.structured()
    )


TIME = {"timezone": "Asia/Tokyo", "datetime": "2026-11-23T19:19:49+09:00", "day_of_week": "Monday", "is_dst": False}


def paths(result, key="divergent"):
    return [item["path"] if isinstance(item, dict) else item for item in result.evidence[key]]


# --- MCP -------------------------------------------------------------------------------


def test_mcp_identical_is_none():
    result = compare(mcp(TIME), mcp(TIME, provenance=SIM), channel="mcp")
    assert (result.score, result.kind, result.evidence["divergent"], result.evidence["masked"]) == (0.0, "none", [], [])


def test_mcp_noise_only_is_masked():
    real = {**TIME, "request_id": "4f9c2a7e-0d1b-4c55-9a0e-1f2b3c4d5e6f", "elapsed_ms": 12}
    sim = {
        **TIME,
        "datetime": "2026-11-23T19:30:02+09:00",
        "request_id": "0b7d9e21-5a3c-4e8f-b1d2-aa00bb11cc22",
        "elapsed_ms": 40,
    }
    result = compare(mcp(real), mcp(sim, provenance=SIM), channel="mcp")
    assert (result.score, result.kind) == (0.0, "none")
    assert set(paths(result, "masked")) == {"$.result.datetime#instant", "$.result.request_id", "$.result.elapsed_ms"}


def test_mcp_wrong_offset_is_content():
    sim = {**TIME, "datetime": "2026-11-23T19:19:49+08:00"}
    result = compare(mcp(TIME), mcp(sim, provenance=SIM), channel="mcp")
    assert result.kind == "content" and 0.05 <= result.score <= 0.3
    assert result.evidence["divergent"] == [
        {"path": "$.result.datetime#offset", "kind": "content", "real": TIME["datetime"], "sim": sim["datetime"]}
    ]


def test_mcp_datetime_format_is_format():
    sim = {**TIME, "datetime": "Mon, 23 Nov 2026 10:19:49 +0900"}
    result = compare(mcp(TIME), mcp(sim, provenance=SIM), channel="mcp")
    assert result.kind == "format" and 0 < result.score <= 0.3


def test_mcp_error_vs_success_is_status():
    result = compare(mcp(TIME), mcp("Unknown timezone", is_error=True, provenance=SIM), channel="mcp")
    assert (result.score, result.kind) == (1.0, "status")
    assert paths(result)[0] == "$.error"


def test_mcp_missing_key_and_retyped_value_are_structure():
    sim = {k: v for k, v in TIME.items() if k != "is_dst"} | {"day_of_week": 1}
    result = compare(mcp(TIME), mcp(sim, provenance=SIM), channel="mcp")
    assert result.kind == "structure" and 0.3 <= result.score <= 0.6
    assert set(paths(result)) == {"$.result.is_dst", "$.result.day_of_week"}


def test_mcp_text_compared_by_lines():
    real = mcp("alpha\nbeta\ngamma\ndelta")
    result = compare(real, mcp("alpha\nbeta\nGAMMA RAY\ndelta", provenance=SIM), channel="mcp")
    assert result.kind == "content" and 0.1 <= result.score <= 0.3
    assert paths(result) == ["$.result:3"]


def test_numbers_within_relative_tolerance_are_equal():
    assert compare(mcp({"x": 0.1 + 0.2}), mcp({"x": 0.3}, provenance=SIM), channel="mcp").kind == "none"
    assert compare(mcp({"x": 1.0}), mcp({"x": 1.5}, provenance=SIM), channel="mcp").kind == "content"


def test_ids_hashes_and_uuids_compare_by_shape():
    real = {"commit": "3f2a9c1d0b8e7f6a5d4c3b2a1f0e9d8c7b6a5f4e"}
    same_shape = {"commit": "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"}
    other_shape = {"commit": "9f8e7d6c-5b4a-4321-8fed-cba987654321"}
    assert compare(mcp(real), mcp(same_shape, provenance=SIM), channel="mcp").kind == "none"
    assert compare(mcp(real), mcp(other_shape, provenance=SIM), channel="mcp").kind == "format"


def test_no_builtin_noise_counts_every_difference():
    sim = {**TIME, "datetime": "2026-11-23T19:30:02+09:00"}
    result = compare(mcp(TIME), mcp(sim, provenance=SIM), channel="mcp", noise=NO_NOISE)
    assert result.kind == "content" and result.score > 0
    learned = Noise(builtin=False, paths=frozenset({"$.result.datetime#instant"}))
    assert compare(mcp(TIME), mcp(sim, provenance=SIM), channel="mcp", noise=learned).kind == "none"


# --- HTTP ------------------------------------------------------------------------------

VOLATILE = [("Date", "Mon, 23 Nov 2026 10:19:49 GMT"), ("X-Request-Id", "req_8f3k2l1m0n9b8v7c"), ("Server", "api")]
VOLATILE_SIM = [("Date", "Mon, 23 Nov 2026 10:21:07 GMT"), ("X-Request-Id", "req_1a2b3c4d5e6f7g8h"), ("Server", "api")]
USER = {"id": 7, "name": "Ada", "created_at": "2026-11-23T10:19:49Z"}


def test_http_identical_is_none():
    assert (
        compare(
            http(200, USER, headers=VOLATILE), http(200, USER, headers=VOLATILE, provenance=SIM), channel="http"
        ).kind
        == "none"
    )


def test_http_noise_only_is_masked():
    sim_body = {**USER, "created_at": "2026-11-23T10:21:07Z"}
    result = compare(
        http(200, USER, headers=VOLATILE), http(200, sim_body, headers=VOLATILE_SIM, provenance=SIM), channel="http"
    )
    assert (result.score, result.kind) == (0.0, "none")
    assert set(paths(result, "masked")) == {
        "$.headers.date#instant",
        "$.headers.x-request-id",
        "$.body.created_at#instant",
    }


def test_http_wrong_status_class_is_status_and_same_class_is_structure():
    real = http(404, {"error": "not found"})
    result = compare(http(200, USER), http(404, {"error": "not found"}, provenance=SIM), channel="http")
    assert (result.score, result.kind) == (1.0, "status")
    same_class = compare(real, http(400, {"error": "not found"}, provenance=SIM), channel="http")
    assert same_class.kind == "structure" and 0 < same_class.score < 0.5
    assert paths(same_class) == ["$.status"]


def test_http_missing_body_key_and_content_type_are_structure():
    sim = {k: v for k, v in USER.items() if k != "name"}
    result = compare(http(200, USER), http(200, sim, provenance=SIM), channel="http")
    assert result.kind == "structure" and 0.1 <= result.score <= 0.5
    assert paths(result) == ["$.body.name"]
    html = observation_of(
        response_record(200, "", [("Content-Type", "text/html")], encode_body(b"<p>hi</p>", limit=100), decoded=False),
        SIM,
    )
    assert compare(http(200, USER), html, channel="http").kind == "structure"


def test_http_wrong_offset_in_body_is_content_among_noise():
    real_body = {**USER, "created_at": "2026-11-23T19:19:49+09:00"}
    sim_body = {**USER, "created_at": "2026-11-23T19:19:49+08:00"}
    result = compare(
        http(200, real_body, headers=VOLATILE),
        http(200, sim_body, headers=VOLATILE_SIM, provenance=SIM),
        channel="http",
    )
    assert result.kind == "content" and 0.05 <= result.score <= 0.3
    assert result.evidence["divergent"] == [
        {
            "path": "$.body.created_at#offset",
            "kind": "content",
            "real": real_body["created_at"],
            "sim": sim_body["created_at"],
        }
    ]
    assert set(paths(result, "masked")) == {
        "$.headers.date#instant",
        "$.headers.x-request-id",
        "$.body.created_at#instant",
    }


# --- shell -----------------------------------------------------------------------------


LISTING = "total 8\n-rw-r--r-- 1 agent agent 12 Nov 23 10:19 notes.txt\nbuilt in 0.42s at 2026-11-23T10:19:49Z"


def test_shell_identical_is_none():
    assert compare(shell(LISTING), shell(LISTING, provenance=SIM), channel="shell").kind == "none"


def test_shell_noise_only_is_masked():
    sim = LISTING.replace("10:19 notes", "10:21 notes").replace("0.42s", "1.3s").replace("10:19:49Z", "10:21:50Z")
    result = compare(shell(LISTING), shell(sim, provenance=SIM), channel="shell")
    assert (result.score, result.kind) == (0.0, "none")
    assert set(paths(result, "masked")) == {"$.screen:2", "$.screen:3", "$.screen:3#instant"}


def test_shell_wrong_offset_in_text_is_content():
    real = LISTING.replace("10:19:49Z", "19:19:49+09:00")
    sim = LISTING.replace("10:19:49Z", "18:19:49+08:00")  # the same instant, another zone
    result = compare(shell(real), shell(sim, provenance=SIM), channel="shell")
    assert result.kind == "content" and 0 < result.score < 0.2
    assert [entry["path"] for entry in result.evidence["divergent"]] == ["$.screen:3#offset"]
    # Written with Z on one side and an offset on the other, the format differs too: format ranks above content.
    mixed = compare(shell(LISTING), shell(real, provenance=SIM), channel="shell")
    assert mixed.kind == "format" and {e["path"] for e in mixed.evidence["divergent"]} == {
        "$.screen:3#format",
        "$.screen:3#offset",
    }


def test_shell_wrong_exit_code_is_status_and_other_failure_code_is_structure():
    result = compare(shell("", exit_code=0), shell("", exit_code=1, provenance=SIM), channel="shell")
    assert (result.score, result.kind) == (1.0, "status")
    other = compare(
        shell("no such file", exit_code=2), shell("no such file", exit_code=1, provenance=SIM), channel="shell"
    )
    assert other.kind == "structure" and 0 < other.score < 0.5
    assert paths(other) == ["$.exit_code"]


def test_shell_unknown_exit_code_is_not_compared():
    result = compare(shell("hi", exit_code=0), shell("hi", exit_code=None, provenance=SIM), channel="shell")
    assert result.kind == "none" and "exit code unknown" in result.evidence["note"]


def test_shell_changed_line_and_cwd_are_content():
    result = compare(
        shell("a\nb\nc\nd", cwd="/workspace"), shell("a\nb\nX\nd", cwd="/tmp", provenance=SIM), channel="shell"
    )
    assert result.kind == "content" and 0.3 <= result.score <= 0.6
    assert set(paths(result)) == {"$.screen:3", "$.cwd"}


def test_shell_observation_without_structured_part_reads_the_status_line():
    real = shell("ok", exit_code=0)
    text_only = Observation([{"type": "text", "text": ShellResult("ok", 3, "/workspace").text()}], SIM)
    assert compare(real, text_only, channel="shell").kind == "status"


# --- browser ---------------------------------------------------------------------------

SNAPSHOT = '- heading "Shop" [level=1] [ref=e2]\n- link "Cart" [ref=e5]\n- button "Buy" [ref=e9]'


def test_browser_identical_and_renumbered_refs_are_none():
    real = page("https://shop.test/", "Shop", SNAPSHOT)
    renumbered = page(
        "https://shop.test/",
        "Shop",
        SNAPSHOT.replace("e2", "e1").replace("e5", "e2").replace("e9", "e3"),
        provenance=SIM,
    )
    assert compare(real, real, channel="browser").kind == "none"
    assert compare(real, renumbered, channel="browser").kind == "none"


def test_browser_error_is_status_and_title_is_content():
    real = page("https://shop.test/", "Shop", SNAPSHOT)
    failed = page("https://shop.test/", "Shop", SNAPSHOT, error="Timeout 5000ms exceeded", provenance=SIM)
    assert compare(real, failed, channel="browser").kind == "status"
    retitled = compare(real, page("https://shop.test/", "Store", SNAPSHOT, provenance=SIM), channel="browser")
    assert retitled.kind == "content" and 0 < retitled.score <= 0.15


def test_browser_missing_query_parameter_is_structure():
    real = page("https://shop.test/search?q=hat&page=2", "Shop", SNAPSHOT)
    sim = page("https://shop.test/search?q=hat", "Shop", SNAPSHOT, provenance=SIM)
    result = compare(real, sim, channel="browser")
    assert result.kind == "structure" and paths(result) == ["$.url.query.page"]


ORDER = (
    '- heading "Order placed" [level=1] [ref=e2]\n'
    '- text "Placed {at}" [ref=e5]\n'
    '- text "Request {request}" [ref=e7]\n'
    '- link "Receipt {receipt}" [ref=e9]'
)
ORDER_REAL = {
    "at": "2026-11-23T19:19:49+09:00",
    "request": "req_8f3k2l1m0n9b8v7c",
    "receipt": "4f9c2a7e-0d1b-4c55-9a0e-1f2b3c4d5e6f",
}


def test_browser_wrong_offset_in_snapshot_is_content():
    real = page("https://shop.test/orders?request_id=req_8f3k2l1m0n9b8v7c", "Order", ORDER.format(**ORDER_REAL))
    sim_snapshot = ORDER.format(**{**ORDER_REAL, "at": "2026-11-23T19:19:49+08:00"})
    result = compare(
        real,
        page("https://shop.test/orders?request_id=req_8f3k2l1m0n9b8v7c", "Order", sim_snapshot, provenance=SIM),
        channel="browser",
    )
    assert result.kind == "content" and 0.01 <= result.score <= 0.1
    assert result.evidence["divergent"] == [
        {
            "path": "$.snapshot:2#offset",
            "kind": "content",
            "real": "2026-11-23T19:19:49+09:00",
            "sim": "2026-11-23T19:19:49+08:00",
        }
    ]
    assert paths(result, "masked") == ["$.snapshot:2#instant"]


def test_browser_noise_only_is_masked():
    real = page("https://shop.test/orders?request_id=req_8f3k2l1m0n9b8v7c", "Order", ORDER.format(**ORDER_REAL))
    noise = {
        "at": "2026-11-23T19:21:07+09:00",
        "request": "req_1a2b3c4d5e6f7g8h",
        "receipt": "0b7d9e21-5a3c-4e8f-b1d2-aa00bb11cc22",
    }
    sim_snapshot = ORDER.format(**noise).replace("[ref=e", "[ref=e1")  # the browser's numbering differs too
    sim = page("https://shop.test/orders?request_id=req_1a2b3c4d5e6f7g8h", "Order", sim_snapshot, provenance=SIM)
    result = compare(real, sim, channel="browser")
    assert (result.score, result.kind, result.evidence["divergent"]) == (0.0, "none", [])
    assert set(paths(result, "masked")) == {
        "$.url.query.request_id",
        "$.snapshot:2#instant",
        "$.snapshot:3",
        "$.snapshot:4",
    }
    # Without the built-in detectors the same pair diverges: the masking is what makes it noise.
    assert compare(real, sim, channel="browser", noise=NO_NOISE).kind == "content"


# --- bounds and the float score --------------------------------------------------------


def test_over_the_size_bound_compares_a_sample_and_says_so():
    rows = [{"id": i, "name": f"user {i}", "score": i * 1.5} for i in range(5000)]
    changed = [dict(row) for row in rows]
    for row in changed[::2]:
        row["name"] = "someone else"
    result = compare(mcp(rows), mcp(changed, provenance=SIM), channel="mcp", size_bound=64 * 1024)
    assert "over the size bound" in result.evidence["note"] and "of 5000 compared" in result.evidence["note"]
    assert result.kind == "content" and 0.05 <= result.score <= 0.3  # a third of leaves, half changed: ~1/6
    same = compare(mcp(rows), mcp([dict(row) for row in rows], provenance=SIM), channel="mcp", size_bound=64 * 1024)
    assert same.kind == "none"


def test_divergence_float_reads_the_channel_from_the_shape():
    assert divergence(http(200, USER), http(200, USER, provenance=SIM)) == 0.0
    assert divergence(shell("x", exit_code=0), shell("x", exit_code=1, provenance=SIM)) == 1.0


@pytest.mark.parametrize("channel", ["mcp", "http", "shell", "browser"])
def test_scores_stay_in_range_for_unrelated_observations(channel):
    result = compare(mcp({"a": [1, 2, {"b": "c"}]}), mcp("totally different\ntext", provenance=SIM), channel=channel)
    assert 0.0 <= result.score <= 1.0


def test_json_like_log_lines_compare_the_quoted_values():
    line = 'event "{id}" at "{at}",'
    real = mcp(line.format(id="4f9c2a7e-0d1b-4c55-9a0e-1f2b3c4d5e6f", at="2026-11-23T10:19:49+09:00") + "\ndone")
    noise_only = mcp(
        line.format(id="0b7d9e21-5a3c-4e8f-b1d2-aa00bb11cc22", at="2026-11-23T10:30:00+09:00") + "\ndone",
        provenance=SIM,
    )
    wrong_offset = mcp(
        line.format(id="0b7d9e21-5a3c-4e8f-b1d2-aa00bb11cc22", at="2026-11-23T10:30:00+08:00") + "\ndone",
        provenance=SIM,
    )
    assert compare(real, noise_only, channel="mcp").kind == "none"
    result = compare(real, wrong_offset, channel="mcp")
    assert result.kind == "content" and paths(result) == ["$.result:1#offset"]


def test_a_side_without_its_channels_structure_is_compared_by_outcome():
    model_failure = Observation.error("world model: no HTTP status line in the answer", Provenance.SIM)
    assert compare(http(200, USER), model_failure, channel="http").kind == "status"
    text_page = Observation([{"type": "text", "text": "- Page URL: https://shop.test/\n- Page Title: Shop"}], SIM)
    result = compare(page("https://shop.test/", "Shop", SNAPSHOT), text_page, channel="browser")
    assert result.kind == "structure" and "one side has no snapshot structure" in result.evidence["note"]


def test_a_content_block_only_one_side_has_is_structure():
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    real = Observation([{"type": "text", "text": "chart"}, image], REAL)
    result = compare(real, mcp("chart", provenance=SIM), channel="mcp")
    assert result.kind == "structure" and paths(result) == ["$.blocks"] and 0.3 <= result.score <= 0.6


def test_sampled_lists_of_different_lengths_keep_proportions():
    rows = [{"id": i, "name": f"user {i}"} for i in range(6000)]
    result = compare(mcp(rows), mcp(rows[:3000], provenance=SIM), channel="mcp", size_bound=64 * 1024)
    assert result.kind == "structure" and 0.4 <= result.score <= 0.6  # half the elements missing
    whole = compare(mcp(rows[:600]), mcp(rows[:300], provenance=SIM), channel="mcp")
    assert whole.score == 0.5
