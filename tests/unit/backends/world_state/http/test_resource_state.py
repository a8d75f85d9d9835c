"""The resource state of JSON APIs (backends/world_state/http): learnt from answers of
every provenance, answering what it determines with what the API would send, and
nothing else (None: the model answers)."""

from __future__ import annotations

import json

import pytest

from backends.http.messages import encode_body, response_record
from backends.world_state import http
from backends.world_state.http import caps
from backends.world_state.http.baseline import underlay
from backends.world_state.http.ids import IdFormat
from backends.world_state.session import WorldState, rebuilt
from calls import Call, Observation, Provenance, Source
from router.reports.world_state import would_answer

API = "api.test"


def call(method: str, path: str, body=None, *, query=None, server: str = API) -> Call:
    arguments = {
        "method": method,
        "url": f"https://{server}{path}",
        "path": path,
        "query": query or {},
        "headers": {},
        "body": body,
    }
    return Call("http", server, method, arguments, "s")


def answer(status: int, body=None, *, text: str | None = None, provenance=Provenance.REAL) -> Observation:
    text = text if text is not None else ("" if body is None else json.dumps(body))
    headers = [("Content-Type", "application/json")] if text else []
    structured = response_record(
        status, "", headers, encode_body(text.encode(), limit=max(len(text), 1)), decoded=False
    )
    return Observation([{"type": "text", "text": text}], provenance, is_error=status >= 400, structured=structured)


def served(world: http.HttpWorld, method: str, path: str, body=None, **options) -> tuple[int, object] | None:
    """(status, JSON body or the text) the state answers, None when it does not determine it."""
    outcome = http.answer(world, call(method, path, body, **options))
    if outcome is None:
        return None
    text = outcome.structured["body"]
    return outcome.status, (json.loads(text) if text else "")


def recorded_items() -> http.HttpWorld:
    """An API whose real create and listing were seen."""
    world = http.HttpWorld()
    http.observe(
        world,
        call("POST", "/items", {"name": "a"}),
        answer(201, {"id": 1, "name": "a", "done": False}),
        provenance="real",
    )
    http.observe(world, call("GET", "/items"), answer(200, [{"id": 1, "name": "a", "done": False}]), provenance="real")
    return world


def test_created_resources_are_read_changed_listed_and_deleted_from_state():
    world = recorded_items()
    assert served(world, "POST", "/items", {"name": "b"}) == (201, {"id": 2, "name": "b", "done": False})
    assert served(world, "GET", "/items/2") == (200, {"id": 2, "name": "b", "done": False})
    assert served(world, "PATCH", "/items/2", {"done": True}) == (200, {"id": 2, "name": "b", "done": True})
    assert served(world, "PUT", "/items/1", {"name": "A"}) == (200, {"id": 1, "name": "A"})
    assert served(world, "GET", "/items/") == (200, [{"id": 1, "name": "A"}, {"id": 2, "name": "b", "done": True}])
    assert served(world, "DELETE", "/items/2") == (204, "")
    assert served(world, "GET", "/items/2") == (404, {"detail": "Not Found"})
    assert served(world, "PATCH", "/items/2", {"done": False}) == (404, {"detail": "Not Found"})
    assert served(world, "GET", "/items") == (200, [{"id": 1, "name": "A"}])
    assert served(world, "POST", "/items", {"name": "c"})[1]["id"] == 3  # the API's counter does not reuse ids


def test_what_the_state_does_not_determine_is_left_to_the_model():
    world = recorded_items()
    assert served(world, "GET", "/items/1", server="other.test") is None  # an API it never saw
    assert served(world, "GET", "/items", query={"done": "true"}) is None  # a filter is the API's own logic
    assert served(world, "GET", "/items/7/notes") is None and served(world, "OPTIONS", "/items") is None
    assert served(world, "POST", "/items", "not an object") is None
    assert served(world, "POST", "/items", {"id": 9, "name": "mine"}) is None  # an id the client chose
    partial = http.HttpWorld()
    http.observe(partial, call("GET", "/items/1"), answer(200, {"id": 1, "name": "a"}), provenance="real")
    assert served(partial, "GET", "/items/1") == (200, {"id": 1, "name": "a"})
    # Not every member known.
    assert served(partial, "GET", "/items") is None and served(partial, "GET", "/items/2") is None
    assert served(partial, "POST", "/items", {"name": "b"}) is None  # no create seen: 200 or 201 is the API's choice


def test_the_apis_own_404_body_json_style_and_listing_envelope_are_kept():
    world = http.HttpWorld()
    http.observe(
        world,
        call("POST", "/v1/users", {"name": "ann"}),
        answer(201, text='{"uid":"u_4f9a2c1b","name":"ann"}'),
        provenance="real",
    )
    http.observe(world, call("GET", "/v1/users/u_0"), answer(404, text='{"error":"no such user"}'), provenance="real")
    listing = '{"users":[{"uid":"u_4f9a2c1b","name":"ann"}],"total":1,"page":1}'
    http.observe(world, call("GET", "/v1/users"), answer(200, text=listing), provenance="real")
    status, made = served(world, "POST", "/v1/users", {"name": "bob"})
    assert status == 201 and made["uid"].startswith("u_") and len(made["uid"]) == len("u_4f9a2c1b")
    outcome = http.answer(world, call("GET", "/v1/users"))
    assert outcome.structured["body"] == json.dumps(
        {"users": [{"uid": "u_4f9a2c1b", "name": "ann"}, made], "total": 2, "page": 1}, separators=(",", ":")
    )
    assert served(world, "DELETE", f"/v1/users/{made['uid']}") == (204, "")
    gone = http.answer(world, call("GET", f"/v1/users/{made['uid']}"))
    assert (gone.status, gone.structured["body"]) == (404, '{"error":"no such user"}')


@pytest.mark.parametrize(
    ("seen", "made"),
    [
        (["41", "7"], "42"),
        (
            ["3f2b8c1e-9d4a-4b6e-8f1a-2c3d4e5f6a7b"],
            r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
        ),
        (["cus_N8xK2pQ4rT6vW1"], r"cus_[A-Za-z0-9]{14}"),
    ],
)
def test_new_ids_follow_the_kind_of_the_ids_seen(seen, made):
    import re

    ids = IdFormat()
    for value in seen:
        ids.learn(value)
    first, second = ids.next("a"), ids.next("b")
    assert re.fullmatch(made, str(first)) and first != second
    assert IdFormat.from_json(ids.to_json()) == ids


def test_a_simulated_answer_fills_what_is_unknown_and_a_later_real_one_wins():
    world = recorded_items()
    http.observe(
        world,
        call("GET", "/items/1"),
        answer(200, {"id": 1, "name": "model's"}, provenance=Provenance.SIM),
        provenance="sim",
    )
    assert served(world, "GET", "/items/1") == (200, {"id": 1, "name": "a", "done": False})  # the real answer stays
    partial = http.HttpWorld()
    http.observe(partial, call("GET", "/items/5"), answer(200, {"id": 5, "v": 1}), provenance="real")
    http.observe(partial, call("GET", "/items/6"), answer(200, {"id": 6, "v": "invented"}), provenance="sim")
    outcome = http.answer(partial, call("GET", "/items/6"))
    assert outcome.invented and json.loads(outcome.structured["body"])["v"] == "invented"  # read the same way again
    http.observe(partial, call("GET", "/items/6"), answer(404, {"detail": "gone"}), provenance="real")
    assert served(partial, "GET", "/items/6") == (404, {"detail": "gone"})  # the API's own 404 from then on
    http.observe(partial, call("GET", "/items/6"), answer(200, {"id": 6, "v": "back"}), provenance="real")
    assert served(partial, "GET", "/items/6") == (200, {"id": 6, "v": "back"})


def test_a_change_the_state_cannot_follow_makes_what_it_touched_unknown():
    world = recorded_items()
    http.observe(world, call("POST", "/items/1/archive"), answer(200, {"ok": True}), provenance="real")
    assert served(world, "GET", "/items/1") is None and served(world, "GET", "/items") is None
    http.observe(world, call("POST", "/items", {"name": "x"}), answer(200, text="<html>made</html>"), provenance="real")
    assert served(world, "GET", "/items") is None


def test_recordings_lie_beneath_what_the_session_learnt():
    session = http.HttpWorld()
    http.observe(session, call("GET", "/items/1"), answer(404, {"detail": "Not Found"}), provenance="real")
    recorded = recorded_items()
    http.observe(
        recorded, call("GET", "/items/2"), answer(200, {"id": 2, "name": "old", "done": True}), provenance="real"
    )
    underlay(session.api(API), recorded.apis[API])
    assert served(session, "GET", "/items/1")[0] == 404  # the session's own, newer, answer wins
    assert served(session, "GET", "/items/2") == (200, {"id": 2, "name": "old", "done": True})
    assert served(session, "POST", "/items", {"name": "n"}) == (201, {"id": 3, "name": "n", "done": False})
    assert [item["id"] for item in served(session, "GET", "/items")[1]] == [2, 3]


def test_caps_keep_names_and_drop_contents_beyond_1000_resources_or_256_kb():
    world = recorded_items()
    for n in range(caps.MAX_RESOURCES + 50):
        served(world, "POST", "/items", {"name": f"n{n}"})
    items = world.apis[API].collections["/items"].items
    assert (
        len(items) == caps.MAX_RESOURCES + 51
        and sum(item.body is not None for item in items.values()) == caps.MAX_RESOURCES
    )
    # Known to exist, contents unknown: the model's.
    assert served(world, "GET", f"/items/{caps.MAX_RESOURCES + 51}") is None
    assert served(world, "GET", "/items") is None and served(world, "GET", "/items/2")[0] == 200
    big = recorded_items()
    for _ in range(3):
        served(big, "POST", "/items", {"text": "x" * 100_000})
    kept = [item.size for item in big.apis[API].collections["/items"].items.values() if item.body is not None]
    assert sum(kept) <= caps.MAX_CONTENT_BYTES and len(kept) == 3  # one of the three large ones lost its contents


def test_the_session_slice_shares_and_summarises_the_http_state():
    state = WorldState()
    state.learn_call(call("POST", "/items", {"name": "a"}), answer(201, {"id": 1, "name": "a"}), at=0.0)
    again = WorldState()
    again.merge(state.fields())
    assert served(again.http_world(), "GET", "/items/1") == (200, {"id": 1, "name": "a"})
    summary = again.summary()["http"][API]
    assert summary["id_field"] == "id" and summary["collections"]["/items"] == {
        "resources": 1,
        "ids": ["1"],
        "unknown": 0,
        "invented": 0,
        "gone": 0,
        "complete": False,
    }


def test_a_session_rebuilt_from_its_records_holds_what_the_state_answered_and_says_what_it_would_answer():
    made = answer(201, {"id": 2, "name": "b"}, provenance=Provenance.SIM)
    made.source = Source(sub="state", extra={"invented": True})
    turns = [
        (call("POST", "/items", {"name": "a"}), answer(201, {"id": 1, "name": "a"}), False, 1.0),
        (
            call("POST", "/items", {"name": "b"}),
            made,
            False,
            2.0,
        ),  # the state's own answer: its effects were not recorded apart
        (call("DELETE", "/items/1"), answer(204), True, 3.0),  # perturbed: teaches nothing
    ]
    state = rebuilt(turns)
    assert would_answer(state, call("GET", "/items/2")) == {
        "sub": "state",
        "status": 200,
        "body": '{"id": 2, "name": "b"}',
    }
    assert would_answer(state, call("GET", "/items/1"))["status"] == 200
    assert would_answer(state, call("GET", "/items/3")) == {"sub": "model"}
    assert state.summary()["http"][API]["collections"]["/items"]["invented"] == 1


def test_a_failed_simulation_changes_nothing():
    world = recorded_items()
    failed = Observation.error("simroute: the simulator failed: timeout", Provenance.SIM)
    assert not http.observe(world, call("POST", "/items", {"name": "x"}), failed, provenance="sim")
    assert served(world, "GET", "/items") == (200, [{"id": 1, "name": "a", "done": False}])


def test_one_256_kb_cap_holds_for_the_shell_and_the_apis_of_a_session_together():
    from backends.shell.screen import ShellResult
    from backends.world_state.shell import caps as shell_caps

    state = WorldState()
    shell = Call("shell", "sandbox", "shell_exec", {"command": f"echo {'s' * 150_000} > notes.txt"}, "s")
    state.learn_call(
        shell, Observation([], Provenance.REAL, structured=ShellResult("", 0, "/workspace").structured()), at=0.0
    )
    assert shell_caps.content_bytes(state.shell.fs) > 150_000  # the shell alone is within its cap
    for n in (1, 2):
        state.learn_call(
            call("POST", "/items", {"text": "h" * 60_000}), answer(201, {"id": n, "text": "h" * 60_000}), at=float(n)
        )
    # Together past the cap: the larger kind (the shell's one large file) gives up its contents, its name kept.
    assert shell_caps.content_bytes(state.shell.fs) + caps.content_bytes(state.http) <= caps.MAX_CONTENT_BYTES
    notes = state.shell.fs.nodes["/workspace/notes.txt"]
    assert notes.content is None and caps.content_bytes(state.http) > 120_000  # the resources kept theirs
