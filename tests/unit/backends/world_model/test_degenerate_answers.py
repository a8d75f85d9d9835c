"""Degenerate world-model output is caught by the domain checkers, so the simulator
asks once more and then answers a clear simulation error: bare code fences and the
prompt's keystrokes on a terminal screen, an answer naming another entity than the
call asked for."""

import json

import pytest

from backends.http.messages import encode_body, observation_of, response_record
from backends.shell.screen import ShellResult
from backends.world_model.checks import check_terminal, degenerate_screen
from backends.world_model.echoed_inputs import contradicted_argument, echoed_fields, wrong_entity
from backends.world_model.grounding import Grounding
from backends.world_model.http_domain import HttpDomain
from backends.world_model.mcp_domain import McpDomain
from calls import Call, Observation, Provenance, Session, Turn


def screen(output: str) -> Observation:
    result = ShellResult(output, 0, "/workspace")
    return Observation([{"type": "text", "text": result.text()}], Provenance.SIM, structured=result.structured())


@pytest.mark.parametrize(
    "output",
    [
        "```\n```\n```\n```\n",
        "```\n[0]\n[1]\n```\n",
        "```json\n```\n",
        "```\n",
        '```\n```\n[0] 1.0\n[1] 1.0\n```\nThis is the expected output for the action "cat notes.txt".\nIt '
        "lists\nthe file\nline by line\n",
        '[{"keystrokes": "cat notes.txt\\n", "duration": 30}]\n',
    ],
)
def test_fences_and_echoed_keystrokes_are_not_a_screen(output):
    assert check_terminal(screen(output)) is not None


@pytest.mark.parametrize(
    "output",
    ["hello from the sandbox\n", "", "# Title\n\n```sh\nmake test\n```\n\nRun it.\nThen ship.\nDone.\n"],
)
def test_real_output_passes_even_with_a_fence_or_two(output):
    assert check_terminal(screen(output)) is None


def test_half_fences_is_the_line():
    assert degenerate_screen("a\n```\nb\n```\n") is not None  # 2 of 4 lines
    assert degenerate_screen("a\nb\nc\n```\nd\n```\n") is None  # 2 of 6


def test_an_answer_naming_another_entity_contradicts_the_call():
    asked = {"timezone": "America/Lima"}
    assert "Europe/Paris" in contradicted_argument(asked, {"timezone": "Europe/Paris", "datetime": "x"})
    assert contradicted_argument(asked, {"timezone": "america/lima "}) is None  # case and space
    assert contradicted_argument({"city": "Lima"}, {"city": "Lima, Peru"}) is None  # containment agrees
    assert contradicted_argument(asked, {"zone": "Europe/Paris"}) is None  # another field: not judged
    assert contradicted_argument({"n": 3}, {"n": 4}) is None  # strings only
    assert contradicted_argument(asked, ["Europe/Paris"]) is None


def test_the_mcp_domain_checks_json_text_answers_against_the_call():
    domain = McpDomain(tools_for=lambda server: [], output_schema_for=lambda s, t: None)
    call = Call("mcp", "time", "get_current_time", {"timezone": "America/Lima"}, "s")
    constraint = domain.constraint(call, Session("s"), Grounding(), max_tokens=64)
    wrong = Observation(
        [{"type": "text", "text": '{"timezone": "Europe/Paris", "datetime": "2026-01-01T10:00:00+01:00"}'}],
        Provenance.SIM,
    )
    right = Observation(
        [{"type": "text", "text": '{"timezone": "America/Lima", "datetime": "2026-01-01T04:00:00-05:00"}'}],
        Provenance.SIM,
    )
    error = Observation(
        [{"type": "text", "text": "Error: unknown timezone Europe/Paris"}], Provenance.SIM, is_error=True
    )
    assert "Europe/Paris" in constraint.check(wrong)
    assert constraint.check(right) is None and constraint.check(error) is None


def test_recorded_answers_teach_which_field_echoes_which_input():
    examples = [
        ({"path": "/weather/paris"}, {"city": "paris", "temp_c": 12}),
        ({"path": "/weather/tokyo"}, {"city": "tokyo", "temp_c": 20}),
    ]
    echoes = echoed_fields(examples)
    assert echoes == {"city": "path[1]"}
    assert "'paris'" in wrong_entity(echoes, {"path": "/weather/lima"}, {"city": "paris", "temp_c": 12})
    assert wrong_entity(echoes, {"path": "/weather/lima"}, {"city": "Lima", "temp_c": 24}) is None
    # One example, or a field that never changes, proves nothing.
    assert echoed_fields(examples[:1]) == {}
    assert echoed_fields([({"q": "a"}, {"unit": "a"}), ({"q": "a"}, {"unit": "a"})]) == {}


def test_the_http_domain_refuses_a_simulated_answer_for_another_city():
    def exchange(path, body):
        structured = response_record(
            200, "OK", [("Content-Type", "application/json")], encode_body(body.encode(), limit=10_000), decoded=False
        )
        return {
            "id": path,
            "channel": "http",
            "server": "api.test",
            "tool": "GET",
            "arguments": {"method": "GET", "path": path},
            "observation": observation_of(structured, Provenance.REAL).to_json(),
        }

    rows = [
        exchange("/weather/paris", '{"city": "paris", "temp_c": 12}'),
        exchange("/weather/tokyo", '{"city": "tokyo", "temp_c": 20}'),
    ]
    call = Call("http", "api.test", "GET", {"method": "GET", "path": "/weather/lima"}, "s")
    constraint = HttpDomain().constraint(call, Session("s"), Grounding(rows=rows, answers=rows), max_tokens=128)

    def answer(body):
        return observation_of(
            response_record(
                200,
                "OK",
                [("Content-Type", "application/json")],
                encode_body(body.encode(), limit=10_000),
                decoded=False,
            ),
            Provenance.SIM,
        )

    assert "'paris'" in constraint.check(answer('{"city": "paris", "temp_c": 12}'))
    assert constraint.check(answer('{"city": "lima", "temp_c": 24}')) is None


def test_the_grammar_writes_the_entity_the_call_asked_for():
    def exchange(path, body):
        structured = response_record(
            200, "OK", [("Content-Type", "application/json")], encode_body(body.encode(), limit=10_000), decoded=False
        )
        return {
            "id": path,
            "arguments": {"method": "GET", "path": path},
            "observation": observation_of(structured, Provenance.REAL).to_json(),
        }

    rows = [
        exchange("/weather/paris", '{"city": "paris", "temp_c": 12}'),
        exchange("/weather/tokyo", '{"city": "tokyo", "temp_c": 20}'),
    ]
    call = Call("http", "api.test", "GET", {"method": "GET", "path": "/weather/lima"}, "s")
    grammar = HttpDomain().constraint(call, Session("s"), Grounding(rows=rows, answers=rows), max_tokens=128).grammar
    assert "lima" in grammar and "paris" not in grammar  # the city is a constant of this call's grammar

    def answered(zone):
        text = json.dumps({"timezone": zone, "datetime": "2026-01-01T10:00:00+01:00"})
        return {
            "arguments": {"timezone": zone},
            "observation": Observation([{"type": "text", "text": text}], Provenance.REAL).to_json(),
        }

    domain = McpDomain(tools_for=lambda server: [], output_schema_for=lambda s, t: None)
    mcp_call = Call("mcp", "time", "get_current_time", {"timezone": "America/Lima"}, "s")
    recorded = [answered("Europe/Paris"), answered("Asia/Tokyo")]
    grammar = domain.constraint(
        mcp_call, Session("s"), Grounding(rows=recorded, answers=recorded), max_tokens=128
    ).grammar
    assert "America/Lima" in grammar and "Europe/Paris" not in grammar


def test_the_sessions_own_earlier_exchanges_teach_the_echo_too():
    """The agent asked for Paris and Tokyo a moment ago in this session (no other session recorded anything)."""

    def turn(path, body):
        structured = response_record(
            200, "OK", [("Content-Type", "application/json")], encode_body(body.encode(), limit=10_000), decoded=False
        )
        return Turn(
            Call("http", "api.test", "GET", {"method": "GET", "path": path}, "s"),
            observation_of(structured, Provenance.REAL),
        )

    session = Session("s")
    session.add_turn(turn("/weather/paris", '{"city": "paris", "temp_c": 12}'))
    session.add_turn(turn("/weather/tokyo", '{"city": "tokyo", "temp_c": 20}'))
    call = Call("http", "api.test", "GET", {"method": "GET", "path": "/weather/lima"}, "s")
    constraint = HttpDomain().constraint(call, session, Grounding(), max_tokens=128)
    copied = observation_of(
        response_record(200, "OK", [], encode_body(b'{"city": "tokyo", "temp_c": 20}', limit=10_000), decoded=False),
        Provenance.SIM,
    )
    assert "'tokyo'" in constraint.check(copied) and "lima" in constraint.grammar
