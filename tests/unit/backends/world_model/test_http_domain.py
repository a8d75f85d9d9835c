"""The HTTP domain: raw requests in, raw responses out, history of the same host."""

import pytest

from backends.http.messages import HttpSettings, encode_body, make_call, observation_of, response_record
from backends.world_model.http_domain import HttpDomain, route_json_bodies
from backends.world_model.parse import InvalidPrediction
from calls import Provenance, Session, Turn


def call(url, method="GET", session="s", body=b""):
    return make_call(
        method=method,
        url=url,
        headers=[("Accept", "application/json")],
        body=body,
        session_id=session,
        settings=HttpSettings(),
    )


def response(status, body):
    return response_record(
        status, "", [("Content-Type", "application/json")], encode_body(body.encode(), limit=10_000), decoded=False
    )


def row(request, structured, session="old"):
    return {
        "session": session,
        "channel": "http",
        "server": request.server,
        "tool": request.tool,
        "arguments": request.arguments,
        "observation": observation_of(structured, Provenance.REAL).to_json(),
    }


def tokens(text):
    return len(text) // 4


def test_history_shows_this_hosts_exchanges_as_raw_http_and_examples_come_right_before_the_request():
    session = Session("s")
    session.history.append(
        Turn(call("http://api.test/users/1"), observation_of(response(200, '{"id": 1}'), Provenance.REAL))
    )
    session.history.append(Turn(call("http://other.test/x"), observation_of(response(200, "{}"), Provenance.REAL)))
    example = (call("http://api.test/users/2", session="old"), response(200, '{"id": 2, "name": "Ann"}'))
    domain = HttpDomain(records_for=lambda c: [row(*example)], initial_state={"api.test": "Users 1-3 exist."})
    messages = domain.messages(call("http://api.test/users/3"), session, budget_tokens=4000, count_tokens=tokens)
    assert "HTTP server api.test" in messages[0]["content"] and "Users 1-3 exist." in messages[0]["content"]
    # this host's history (not other.test), then the example as the turn before the current request
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "GET /users/1 HTTP/1.1\nHost: api.test" in messages[1]["content"]
    assert messages[2]["content"].startswith(
        '**Environment Observation:**\nHTTP/1.1 200 OK\nContent-Type: application/json\n\n{"id": 1}'
    )
    assert (
        messages[3]["content"].startswith("(A real exchange of this server in another session")
        and "GET /users/2" in messages[3]["content"]
    )
    assert '"name": "Ann"' in messages[4]["content"]
    final = messages[5]["content"]
    assert (
        final.startswith("### Turn 3\n**Action:**\n```http\nGET /users/3 HTTP/1.1")
        and "<predicted_observation>" in final
    )


def test_predictions_parse_leniently_and_garbage_is_a_clear_sim_error():
    domain = HttpDomain()
    c = call("http://api.test/users/3")
    good = domain.observation(
        c,
        'Sure:\n```http\nHTTP/1.1 404 Not Found\nContent-Type: application/json\nContent-Length: 99\n\n{"error": '
        '"no"}\n```',
    )
    assert good.structured["status"] == 404 and good.structured["body"] == '{"error": "no"}\n' and good.is_error
    assert ["Content-Length", "99"] not in good.structured["headers"]
    # SmolLM2's habit: the fence closes after the headers and the model goes on with another turn.
    headers_only = domain.observation(
        c, "**Observation:**\n\n```\nHTTP/1.1 200 OK\nContent-Type: application/json\n```\n\n**Action:**\nGET /x"
    )
    assert headers_only.structured["status"] == 200 and headers_only.structured["body"] == ""
    with pytest.raises(InvalidPrediction, match="not an HTTP response"):
        domain.observation(c, "I think the user exists")  # the simulator asks once more, then errs clearly


def test_demonstrations_prefer_the_same_url_then_path_best_last():
    rows = [
        row(call("http://api.test/teams"), response(200, "other")),
        row(call("http://api.test/users/3?x=1"), response(200, "same path")),
        row(call("http://api.test/users/3"), response(200, "same url")),
    ]
    domain = HttpDomain(records_for=lambda c: rows)
    chosen = domain.ground(call("http://api.test/users/3"), Session("s"), count_tokens=tokens).rows
    assert [r["observation"]["structured"]["body"] for r in chosen] == ["same path", "same url"]


def test_a_route_whose_recordings_are_json_gets_a_json_body_grammar_and_check():
    rows = [row(call("http://api.test/users"), response(200, '[{"id": 1, "name": "Ann"}]'))]
    domain = HttpDomain(records_for=lambda c: rows)
    listing = call("http://api.test/users")
    grounding = domain.ground(listing, Session("s"), count_tokens=tokens)
    assert route_json_bodies(grounding.answers, listing) == [[{"id": 1, "name": "Ann"}]]
    constraint = domain.constraint(listing, Session("s"), grounding, max_tokens=128)
    assert "json-root" in constraint.grammar and '"HTTP/1.1 "' in constraint.grammar
    not_json = domain.observation(listing, "HTTP/1.1 200 OK\nContent-Type: text/plain\n\nhello")
    assert constraint.check(not_json) == "the body is not JSON (the route's recorded answers are)"
    assert constraint.check(domain.observation(listing, 'HTTP/1.1 200 OK\n\n[{"id": 2, "name": "Bo"}]')) is None
    # Another route of the host with no recordings: any body.
    cold = domain.constraint(call("http://api.test/teams"), Session("s"), grounding, max_tokens=128)
    assert "json-root" not in cold.grammar


def test_small_model_habits_are_read_leniently():
    from backends.world_model.http_domain import read_message

    fenced_body = 'HTTP/1.1 200 OK\nContent-Type: application/json\n\n```json\n{"ok": true}\n```\n\nThis is the answer.'
    assert read_message(fenced_body) == 'HTTP/1.1 200 OK\nContent-Type: application/json\n\n{"ok": true}\n'
    assert read_message("**HTTP/1.1 404 Not Found\nA: b\n\n{}").startswith("HTTP/1.1 404 Not Found\nA: b\n\n{}")
    assert read_message("HTTP/1.1 200 OK\nServer: x\nHTTP/1.1 200 OK\nServer: x") == "HTTP/1.1 200 OK\nServer: x\n\n"
    assert read_message('HTTP/1.1 200 OK\n\n{"a": 1}\n\n**Observation:**\n\nmore') == 'HTTP/1.1 200 OK\n\n{"a": 1}'
    unclosed = read_message('HTTP/1.1 200 OK\n\n```\n{"items": [1,')
    assert unclosed.endswith('{"items": [1,')


def test_long_bodies_are_cut_for_the_model():
    domain = HttpDomain(body_chars=50)
    big = call("http://api.test/upload", method="POST", body=b"x" * 500)
    action = domain.render_action(big, 1)
    assert "x" * 50 + "\n[450 characters cut]" in action and "x" * 51 not in action
