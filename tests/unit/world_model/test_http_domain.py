"""The HTTP domain: raw requests in, raw responses out, history of the same host."""

from backends.http_messages import HttpSettings, encode_body, make_call, observation_of, response_record
from backends.world_model.http_domain import HttpDomain, select_http_demonstrations
from router.types import Provenance, Session, Turn


def call(url, method="GET", session="s", body=b""):
    return make_call(method=method, url=url, headers=[("Accept", "application/json")], body=body, session_id=session, settings=HttpSettings())


def response(status, body):
    return response_record(status, "", [("Content-Type", "application/json")], encode_body(body.encode(), limit=10_000), decoded=False)


def tokens(text):
    return len(text) // 4


def test_history_shows_this_hosts_exchanges_as_raw_http_and_examples_come_right_before_the_request():
    session = Session("s")
    session.history.append(Turn(call("http://api.test/users/1"), observation_of(response(200, '{"id": 1}'), Provenance.REAL)))
    session.history.append(Turn(call("http://other.test/x"), observation_of(response(200, "{}"), Provenance.REAL)))
    example = (call("http://api.test/users/2", session="old"), response(200, '{"id": 2, "name": "Ann"}'))
    domain = HttpDomain(demonstrations_for=lambda c: [example], initial_state={"api.test": "Users 1-3 exist."})
    messages = domain.messages(call("http://api.test/users/3"), session, budget_tokens=4000, count_tokens=tokens)
    assert "HTTP server api.test" in messages[0]["content"] and "Users 1-3 exist." in messages[0]["content"]
    # this host's history (not other.test), then the example as the turn before the current request
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "GET /users/1 HTTP/1.1\nHost: api.test" in messages[1]["content"]
    assert messages[2]["content"].startswith("**Environment Observation:**\nHTTP/1.1 200 OK\nContent-Type: application/json\n\n{\"id\": 1}")
    assert messages[3]["content"].startswith("(A real exchange of this server in another session") and "GET /users/2" in messages[3]["content"]
    assert '"name": "Ann"' in messages[4]["content"]
    final = messages[5]["content"]
    assert final.startswith("### Turn 3\n**Action:**\n```http\nGET /users/3 HTTP/1.1") and "<predicted_observation>" in final


def test_predictions_parse_leniently_and_garbage_is_a_clear_sim_error():
    domain = HttpDomain()
    c = call("http://api.test/users/3")
    good = domain.observation(c, 'Sure:\n```http\nHTTP/1.1 404 Not Found\nContent-Type: application/json\nContent-Length: 99\n\n{"error": "no"}\n```')
    assert good.structured["status"] == 404 and good.structured["body"] == '{"error": "no"}\n' and good.is_error
    assert ["Content-Length", "99"] not in good.structured["headers"]
    # SmolLM2's habit: the fence closes after the headers and the model goes on with another turn.
    headers_only = domain.observation(c, "**Observation:**\n\n```\nHTTP/1.1 200 OK\nContent-Type: application/json\n```\n\n**Action:**\nGET /x")
    assert headers_only.structured["status"] == 200 and headers_only.structured["body"] == ""
    bad = domain.observation(c, "I think the user exists")
    assert bad.is_error and bad.structured["status"] == 502 and "not an HTTP response" in bad.text


def test_demonstrations_prefer_the_same_url_then_path_best_last():
    rows = [
        {"arguments": call("http://api.test/users/3").arguments, "observation": observation_of(response(200, "same url"), Provenance.REAL).to_json()},
        {"arguments": call("http://api.test/users/3?x=1").arguments, "observation": observation_of(response(200, "same path"), Provenance.REAL).to_json()},
        {"arguments": call("http://api.test/teams").arguments, "observation": observation_of(response(200, "other"), Provenance.REAL).to_json()},
    ]
    chosen = select_http_demonstrations(rows, call("http://api.test/users/3"), 2)
    assert [structured["body"] for _, structured in chosen] == ["same path", "same url"]


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
