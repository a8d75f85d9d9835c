"""The canonical form of HTTP requests: what two requests share to be the same one."""

from backends.replay import ReplayBackend
from calls import Call
from shadow.compare.http_canonical import canonical_arguments, canonical_form, drop_body_fields, normalize_url


def test_urls_normalise_scheme_host_default_port_query_order_and_fragment():
    assert normalize_url("HTTP://API.Example.com:80/v1/x?b=2&a=1#top") == "http://api.example.com/v1/x?a=1&b=2"
    assert normalize_url("https://h:443") == "https://h/"
    assert normalize_url("https://h:8443/p?a=") == "https://h:8443/p?a="


def test_ignored_query_parameters_leave_the_url_and_the_query():
    args = {"url": "http://h/p?ts=1&q=x", "query": {"ts": "1", "q": "x"}, "body": None}
    canonical = canonical_arguments(args, ignore_query=["ts"])
    assert canonical["url"] == "http://h/p?q=x" and canonical["query"] == {"q": "x"}
    assert args["query"] == {"ts": "1", "q": "x"}  # the call itself keeps its values


def test_ignored_body_fields_nested_and_in_lists():
    body = {"q": 1, "meta": {"request_id": "r1", "keep": True}, "items": [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]}
    dropped = drop_body_fields(body, ["meta.request_id", "items.*.id"])
    assert dropped == {"q": 1, "meta": {"keep": True}, "items": [{"v": "a"}, {"v": "b"}]}
    assert body["meta"]["request_id"] == "r1"


def test_replay_keys_of_noisy_requests_match_and_stored_keys_use_the_canonical_form():
    replay = ReplayBackend(
        None, canonical={"http": canonical_form(ignore_query=["ts"], ignore_body_fields=["request_id"])}
    )

    def call(ts, rid, order):
        query = {"ts": ts, "q": "x"}
        body = {"request_id": rid, "a": 1, "b": 2} if order else {"b": 2, "a": 1, "request_id": rid}
        return Call(
            "http",
            "h",
            "POST",
            {
                "method": "POST",
                "url": f"http://h/p?q=x&ts={ts}",
                "path": "/p",
                "query": query,
                "headers": {},
                "body": body,
            },
            "s",
        )

    assert replay.keys(call("1", "r1", True)).replay == replay.keys(call("2", "r2", False)).replay
    assert replay.keys(call("1", "r1", True)).exact == replay.keys(call("2", "r2", False)).exact
    other = call("1", "r1", True)
    other.arguments["body"]["a"] = 5
    assert replay.keys(other).replay != replay.keys(call("1", "r1", True)).replay


def test_shadow_comparison_of_http_responses_ignores_volatile_headers_and_formatting():
    from backends.http.messages import encode_body, observation_of, response_record
    from calls import Provenance
    from shadow.compare.divergence import divergence

    def answer(status, body, date):
        headers = [("Date", date), ("Content-Type", "application/json; charset=utf-8"), ("Server", "x")]
        return response_record(status, "", headers, encode_body(body.encode(), limit=1000), decoded=False)

    real = observation_of(answer(200, '{"id": 1, "name": "Ada"}', "Mon"), Provenance.REAL)
    same = observation_of(answer(200, '{\n  "name": "Ada",\n  "id": 1\n}', "Tue"), Provenance.SIM)
    other = observation_of(answer(200, '{"id": 1, "name": "Bob"}', "Mon"), Provenance.SIM)
    assert divergence(real, same) == 0.0
    assert 0 < divergence(real, other) < 0.5
    assert divergence(real, observation_of(answer(404, "{}", "Mon"), Provenance.SIM)) == 1.0


def test_a_normalised_url_is_remembered_per_ignored_parameters():
    url = "HTTP://API.example.com:80/v1/items?b=2&token=x&a=1"
    assert normalize_url(url) == "http://api.example.com/v1/items?a=1&b=2&token=x"
    assert normalize_url(url, ignore_query=["token"]) == "http://api.example.com/v1/items?a=1&b=2"
    # The cache keys on the ignored list too.
    assert normalize_url(url) == "http://api.example.com/v1/items?a=1&b=2&token=x"
