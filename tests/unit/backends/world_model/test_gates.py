"""The stateless gates on every model answer (backends/world_model/gates): degenerate
text, entities the call named, field values of the kind their field holds."""

import json

import pytest

from backends.http.messages import encode_body, observation_of, response_record
from backends.shell.screen import ShellResult
from backends.world_model.gates import (
    degenerate,
    missing_entities,
    real_examples,
    repeatable,
    screen_answer,
    unfit_fields,
)
from backends.world_model.gates.fields import field_kinds, kind
from backends.world_model.http_domain import HttpDomain
from backends.world_model.mcp_domain import McpDomain
from backends.world_model.terminal_domain import TerminalDomain
from backends.world_model.web_domain import WebDomain
from calls import Call, Observation, Provenance, Session, Turn


def text(value: str, *, is_error: bool = False, provenance: Provenance = Provenance.REAL) -> Observation:
    return Observation([{"type": "text", "text": value}], provenance, is_error=is_error)


def row(tool: str, arguments: dict, observation: Observation) -> dict:
    return {
        "session": "old",
        "channel": "mcp",
        "server": "srv",
        "tool": tool,
        "arguments": arguments,
        "observation": observation.to_json(),
    }


def http_observation(body: str, status: int = 200, provenance: Provenance = Provenance.REAL) -> Observation:
    record = response_record(
        status, "", [("Content-Type", "application/json")], encode_body(body.encode(), limit=10_000), decoded=False
    )
    return observation_of(record, provenance)


def http_row(path: str, body: str) -> dict:
    arguments = {"method": "GET", "path": path}
    return {
        "session": "old",
        "channel": "http",
        "server": "api.test",
        "tool": "GET",
        "arguments": arguments,
        **_obs(http_observation(body)),
    }


def _obs(observation: Observation) -> dict:
    return {"observation": observation.to_json()}


# --- degenerate -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("x:1:1:1:1:1:1:1:1:1:1", "repetition"),
        ("git-status-1.0.16:1:1:1:1:1:1:1:1:1:1:1:1", "repetition"),
        ("[0] " + "1.1." * 40, "repetition"),  # long wherever it stands
        ("1. groceries\n" * 12, "repetition"),
        ("On branch main\n" + "modified: a.txt (see above)\n" * 9, "repetition"),
        ("**Environment Observation:**\nREADME.md", "scaffolding"),
        ("done</predicted_observation>", "scaffolding"),
        ("### Turn 4\n**Action:**\n```json\n{}\n```", "scaffolding"),
        ("(A real result of this server in another session, for reference.)\nok", "scaffolding"),
        ('[{"keystrokes": "ls\\n", "duration": 30}]', "scaffolding"),
        ("## Action space\nshell commands\n## Initial state\nempty", "scaffolding"),
        ('You are the MCP server "git". An AI agent is calling your tools.', "scaffolding"),
        ("## Your previous answer was refused\nok", "scaffolding"),
        ("This is the first action in the action space described by the tools.", "commentary"),
        ("This is the expected observation for listing the files.", "commentary"),
        ("Here is the predicted output:\nREADME.md", "commentary"),
        ("notes.txt\nThe AI agent wants to see the file.", "commentary"),
        ("I will now simulate the server's answer.", "commentary"),
        ("In this action, the agent lists the folder.", "commentary"),
    ],
)
def test_degenerate_answers_are_refused(answer, why):
    reason = degenerate(answer)
    assert reason is not None and why in reason, reason


@pytest.mark.parametrize(
    "answer",
    [
        "hello from the sandbox",
        "=" * 80 + "\n3 passed in 0.12s\n" + "=" * 80,  # pytest's rules
        "+-----+-----+\n| a   | b   |\n+-----+-----+",
        "0123456789abcdef" * 20,  # a body of repeated letters and digits (the test upstream's /big)
        "y\n" * 10,  # `yes | head`: short lines
        "0 0 0 0 0 0 0 0 0 0 0 0",
        "total 8\n-rw-r--r-- 1 agent agent 5 Nov 28 01:22 a.txt\n-rw-r--r-- 1 agent agent 5 Nov 28 01:22 b.txt",
        '{\n  "timezone": "Europe/Paris",\n  "datetime": "2026-11-28T02:22:50+01:00",\n  "is_dst": false\n}',
        "# Tools\n\n## Tools\nmake, ruff",  # one of the prompt's headings in a README
        "This is a turn-based game.\nThe agent is offline.\nThe action space is Discrete(4).",
        "notes-store 2.4.1 (build 7731, sqlite backend)",
        "Error: note 3 not found",
        "",
    ],
)
def test_real_looking_answers_pass(answer):
    assert degenerate(answer) is None


def test_what_the_call_or_the_session_said_first_is_not_degenerate():
    echoed = "x:1:1:1:1:1:1:1:1:1:1"
    assert degenerate(echoed, context="echo 'x:1:1:1:1:1:1:1:1:1:1'") is None
    assert degenerate("This is the first action.", context="cat notes.txt\nThis is the first action.") is None
    call = Call("shell", "shell", "shell_exec", {"command": "cat f"}, "s")
    session = Session("s")
    earlier = ShellResult("", 0, "/workspace")
    session.add_turn(
        Turn(
            Call("shell", "shell", "shell_exec", {"command": f"echo '{echoed}' > f"}, "s"),
            Observation([{"type": "text", "text": earlier.text()}], Provenance.REAL, structured=earlier.structured()),
        )
    )
    assert echoed in repeatable(call, session)


def test_a_kind_the_tools_real_answers_show_is_allowed():
    repeated = "[" + ", ".join(["0"] * 12) + "]"
    assert degenerate(repeated) is not None
    assert degenerate(repeated, recorded=["[" + ", ".join(["1"] * 9) + "]"]) is None


def test_a_package_token_is_refused_where_the_tools_answers_are_structured_or_prose():
    prose = ["On branch main\nnothing to commit, working tree clean", '{"status": "clean"}']
    assert "package-like" in degenerate("git-status-1.0.16", recorded=prose)
    assert degenerate("numpy==1.26.0", recorded=prose) is not None
    assert degenerate("git-status-1.0.16") is None  # nothing recorded to judge by
    assert degenerate("git-status-1.0.16", recorded=["mcp-server-git-0.6.2", *prose]) is None  # the tool answers tokens
    assert degenerate("git-status-1.0.16", recorded=prose, context="pip install git-status-1.0.16") is None


def test_every_prompt_message_echoed_back_is_refused():
    """Whatever a domain's prompt says, written back as an answer, is caught."""
    session = Session("s")
    tools = [
        {
            "name": "t",
            "description": "a tool",
            "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
        }
    ]
    prompts = {
        "mcp": McpDomain(tools_for=lambda server: tools, output_schema_for=lambda s, t: None).messages(
            Call("mcp", "srv", "t", {"x": "a"}, "s"), session, budget_tokens=4000, count_tokens=len
        ),
        "shell": TerminalDomain().messages(
            Call("shell", "shell", "shell_exec", {"command": "ls"}, "s"), session, budget_tokens=4000, count_tokens=len
        ),
        "http": HttpDomain().messages(
            Call("http", "api.test", "GET", {"method": "GET", "path": "/x"}, "s"),
            session,
            budget_tokens=4000,
            count_tokens=len,
        ),
        "browser": WebDomain().messages(
            Call("browser", "browser", "browser_snapshot", {}, "s"), session, budget_tokens=8000, count_tokens=len
        ),
    }
    for channel, messages in prompts.items():
        for message in messages:
            assert degenerate(message["content"]) is not None, (channel, message["content"][:80])


# --- entities ---------------------------------------------------------------------------


WEATHER = [
    row("get_weather", {"city": "Paris"}, text("Weather in Paris: 12 C, cloudy")),
    row("get_weather", {"city": "Tokyo"}, text("Weather in Tokyo: 20 C, sunny")),
]
LIMA = Call("mcp", "srv", "get_weather", {"city": "Lima"}, "s")


def test_an_answer_for_another_city_is_refused_when_the_recordings_echo_the_city():
    reason = missing_entities(LIMA, text("Weather in Paris: 12 C, cloudy", provenance=Provenance.SIM), WEATHER)
    assert reason is not None and "'Lima'" in reason and "city" in reason
    assert missing_entities(LIMA, text("Weather in Lima: 24 C, sunny"), WEATHER) is None
    assert missing_entities(LIMA, text("Weather in LIMA: 24 C"), WEATHER) is None  # case-blind
    assert missing_entities(LIMA, text("unknown city", is_error=True), WEATHER) is None  # an error is not judged


def test_only_an_input_every_recording_names_over_two_values_is_held():
    assert missing_entities(LIMA, text("24 C"), WEATHER[:1]) is None  # one recording proves nothing
    same_city = [row("get_weather", {"city": "Paris"}, text(f"Weather in Paris: {n} C")) for n in (10, 12)]
    assert missing_entities(LIMA, text("24 C"), same_city) is None  # one value: maybe a constant
    partly = [*WEATHER, row("get_weather", {"city": "Oslo"}, text("3 C, snowing"))]
    assert missing_entities(LIMA, text("24 C"), partly) is None  # not every answer names it
    errors = [*WEATHER, row("get_weather", {"city": "Atlantis"}, text("no such city", is_error=True))]
    assert missing_entities(LIMA, text("24 C"), errors) is not None  # recorded errors are not counted against the echo


def test_names_are_matched_as_words_across_separators_and_json_escapes():
    zones = [
        row(
            "get_current_time",
            {"timezone": zone},
            text(json.dumps({"timezone": zone, "datetime": "2026-11-28T10:00:00+01:00"})),
        )
        for zone in ("Europe/Paris", "Asia/Tokyo")
    ]
    call = Call("mcp", "time", "get_current_time", {"timezone": "America/New_York"}, "s")
    assert missing_entities(call, text('{"timezone": "America/New_York"}'), zones) is None
    assert missing_entities(call, text('{"timezone": "America/New York"}'), zones) is None
    assert missing_entities(call, text('{"timezone": "Europe/Paris"}'), zones) is not None
    paths = [row("read", {"path": p}, text(json.dumps({"path": p, "size": 3}))) for p in ("C:\\a.txt", "C:\\b.txt")]
    assert (
        missing_entities(
            Call("mcp", "s", "read", {"path": "C:\\c.txt"}, "s"), text(json.dumps({"path": "C:\\c.txt"})), paths
        )
        is None
    )
    ids = [row("get", {"id": i}, text(f"Note {i}: groceries")) for i in ("1", "2")]
    # 7 is not 17.
    assert missing_entities(Call("mcp", "s", "get", {"id": "7"}, "s"), text("Note 17: groceries"), ids) is not None


def test_http_path_segments_are_inputs_too():
    rows = [
        http_row("/weather/paris", '{"city": "paris", "temp_c": 12}'),
        http_row("/weather/tokyo", '{"city": "tokyo", "temp_c": 20}'),
    ]
    call = Call("http", "api.test", "GET", {"method": "GET", "path": "/weather/lima"}, "s")
    assert "'lima'" in missing_entities(call, http_observation('{"town": "paris", "temp_c": 12}'), rows)
    assert missing_entities(call, http_observation('{"town": "Lima", "temp_c": 24}'), rows) is None
    assert missing_entities(call, http_observation('{"error": "unknown"}', 404), rows) is None


# --- fields ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-28T01:22:50", "datetime"),
        ("2026-11-28T01:22:50.123+01:00", "datetime"),
        ("2026-11-28", "datetime"),
        ("01:22", "datetime"),
        ("Sat, 28 Nov 2026 01:22:50 GMT", "datetime"),
        ("https://example.test/a", "url"),
        ("sunny", "word"),
        ("partly cloudy", "prose"),
        ("Europe/Paris", "word"),
        ("a1b2c3", "token"),
        ("1.0.16", "token"),
        ("+6.0h", "token"),
        (12, "number"),
        (True, "boolean"),
        (None, None),
        ("", None),
    ],
)
def test_value_kinds(value, expected):
    assert kind(value) == expected


def weather(city, sky, *, hour=1):
    answer = {"city": city, "temp_c": 12, "sky": sky, "updated": f"2026-11-28T0{hour}:00:00Z", "source": "met"}
    return row("get_forecast", {"city": city}, text(json.dumps(answer)))


FORECASTS = [weather("Paris", "cloudy"), weather("Tokyo", "sunny", hour=2), weather("Oslo", "light snow", hour=3)]


def test_a_datetime_where_recordings_show_words_is_refused():
    answer = text(
        json.dumps({"city": "Lima", "temp_c": 24, "sky": "2026-11-28T01:22:50", "updated": "2026-11-28T01:22:50Z"})
    )
    reason = unfit_fields(answer, FORECASTS)
    assert reason is not None and "sky" in reason and "date" in reason and "words" in reason
    fine = text(json.dumps({"city": "Lima", "temp_c": 24, "sky": "partly cloudy", "updated": "2026-11-28T02:00:00Z"}))
    assert unfit_fields(fine, FORECASTS) is None
    # Missing data fits.
    assert unfit_fields(text(json.dumps({"city": "Lima", "temp_c": 24, "sky": None})), FORECASTS) is None
    assert "updated" in unfit_fields(text(json.dumps({"sky": "sunny", "updated": "yesterday"})), FORECASTS)
    assert "temp_c" in unfit_fields(text(json.dumps({"sky": "sunny", "temp_c": "warm"})), FORECASTS)


def test_a_field_is_judged_only_when_two_recordings_agree_over_two_values():
    answer = text(json.dumps({"sky": "2026-11-28T01:22:50"}))
    assert unfit_fields(answer, FORECASTS[:1]) is None  # one recording
    assert unfit_fields(answer, [weather("Paris", "sunny"), weather("Tokyo", "sunny")]) is None  # a constant
    mixed = [weather("Paris", "sunny"), weather("Tokyo", "2026-11-28")]
    assert unfit_fields(answer, mixed) is None  # the recordings disagree
    kinds = field_kinds("mcp", FORECASTS)
    assert kinds == {"city": "text", "temp_c": "number", "sky": "text", "updated": "datetime"}  # `source` is a constant


def test_names_may_be_tokens_and_ids_single_words():
    products = [
        row("get_price", {"p": p}, text(json.dumps({"product": p, "sku": s, "price": 3})))
        for p, s in (("desk lamp", "a1b2"), ("floor lamp", "c3d4"))
    ]
    assert unfit_fields(text(json.dumps({"product": "X200", "sku": "main", "price": 5})), products) is None
    assert "sku" in unfit_fields(text(json.dumps({"product": "lamp", "sku": "the first lamp", "price": 5})), products)


def test_lists_of_objects_are_judged_per_item_field():
    listings = [
        row("list", {}, text(json.dumps({"products": [{"name": n, "added": d} for n, d in items]})))
        for items in ((("desk lamp", "2026-01-01"), ("wall lamp", "2026-02-01")), (("night lamp", "2026-03-01"),))
    ]
    bad = text(
        json.dumps(
            {"products": [{"name": "lamp", "added": "2026-04-01"}, {"name": "2026-05-01", "added": "2026-05-01"}]}
        )
    )
    assert "products[].name" in unfit_fields(bad, listings)


def test_an_http_body_is_judged_against_its_routes_recordings():
    rows = [
        http_row("/weather/paris", '{"city": "paris", "sky": "cloudy"}'),
        http_row("/weather/tokyo", '{"city": "tokyo", "sky": "sunny"}'),
    ]
    call = Call("http", "api.test", "GET", {"method": "GET", "path": "/weather/lima"}, "s")
    examples = real_examples(call, Session("s"), rows)
    assert len(examples) == 2
    assert "sky" in screen_answer(call, http_observation('{"city": "lima", "sky": "2026-11-28T01:22:50"}'), examples)
    assert screen_answer(call, http_observation('{"city": "lima", "sky": "rain"}'), examples) is None
    other_route = Call("http", "api.test", "GET", {"method": "GET", "path": "/users/1/posts"}, "s")
    assert real_examples(other_route, Session("s"), rows) == []  # another route's answers have another shape


def test_only_real_answers_of_the_session_are_examples():
    session = Session("s")
    session.add_turn(
        Turn(
            Call("mcp", "srv", "get_weather", {"city": "Rome"}, "s"),
            text("Weather in Rome: 18 C", provenance=Provenance.SIM),
        )
    )
    session.add_turn(Turn(Call("mcp", "srv", "get_weather", {"city": "Oslo"}, "s"), text("Weather in Oslo: 3 C")))
    examples = real_examples(LIMA, session, WEATHER)
    assert [r["arguments"]["city"] for r in examples] == ["Paris", "Tokyo", "Oslo"]


def test_screens_and_pages_are_judged_for_degeneracy_only():
    call = Call("shell", "shell", "shell_exec", {"command": "cat notes.txt"}, "s")
    result = ShellResult("This is the first action in the action space described by the terminal.", 200, "/workspace")
    screen = Observation([{"type": "text", "text": result.text()}], Provenance.SIM, structured=result.structured())
    assert "commentary" in screen_answer(call, screen, [])
    fine = ShellResult("buy milk\n", 0, "/workspace")
    assert (
        screen_answer(
            call, Observation([{"type": "text", "text": fine.text()}], Provenance.SIM, structured=fine.structured()), []
        )
        is None
    )
