"""The gates on the simulator's path: a refused answer is asked for once more with
the problem stated, and refused again it is the answer the tool's real recordings
determine, or a clear simulation error; degenerate text is never passed on."""

import json

from backends.shell.screen import ShellResult
from backends.world_model.http_domain import HttpDomain
from backends.world_model.mcp_domain import McpDomain
from backends.world_model.model_runner import Completion
from backends.world_model.simulator import WorldModelSimulator
from backends.world_model.terminal_domain import TerminalDomain
from calls import Call, Observation, Provenance, Session


class ScriptedModelRunner:
    def __init__(self, *answers):
        self.answers = list(answers)
        self.seen = []

    async def start(self):
        pass

    def count_tokens(self, text):
        return len(text) // 4

    async def complete(self, messages, **kwargs):
        self.seen.append((messages, kwargs))
        return Completion(
            f"<predicted_observation>{self.answers.pop(0)}</predicted_observation>", 100, 10, 100, 0.01, "stop"
        )

    async def aclose(self):
        pass


def real_row(tool, arguments, text):
    observation = Observation([{"type": "text", "text": text}], Provenance.REAL)
    return {
        "session": "old",
        "channel": "mcp",
        "server": "srv",
        "tool": tool,
        "arguments": arguments,
        "observation": observation.to_json(),
    }


def simulator(model_runner, *, rows=(), schema=None):
    domain = McpDomain(
        tools_for=lambda server: [{"name": "t", "description": "a tool"}],
        records_for=lambda call: list(rows),
        output_schema_for=lambda server, tool: schema,
    )
    return WorldModelSimulator(model_runner, domains={"mcp": domain})


CALL = Call("mcp", "srv", "t", {"x": 1}, "s")
DEGENERATE = "x:1:1:1:1:1:1:1:1:1:1"


async def test_a_degenerate_answer_is_asked_for_once_more_with_the_problem_stated():
    model_runner = ScriptedModelRunner(DEGENERATE, "hello")
    observation = await simulator(model_runner).simulate(CALL, Session("s"), deadline_s=5)
    assert observation.text == "hello" and not observation.is_error and observation.provenance is Provenance.SIM
    first, retry = model_runner.seen[0][0][-1]["content"], model_runner.seen[1][0][-1]["content"]
    assert "refused" not in first
    assert retry.startswith("## Your previous answer was refused") and "long repetition" in retry
    assert retry.endswith(first)  # the same action, the problem before it
    assert [options["seed_offset"] for _, options in model_runner.seen] == [0, 1]


async def test_degenerate_twice_is_a_clear_simulation_error_never_the_degenerate_text():
    model_runner = ScriptedModelRunner(
        DEGENERATE, "This is the first action in the action space described by the tools."
    )
    observation = await simulator(model_runner).simulate(CALL, Session("s"), deadline_s=5)
    assert observation.is_error and observation.provenance is Provenance.SIM
    assert observation.text.startswith("simroute: world model failed:") and "twice" in observation.text
    assert "commentary" in observation.text
    assert DEGENERATE not in observation.text and "action space described" not in observation.text


async def test_a_package_token_for_a_prose_tool_is_refused():
    rows = [real_row("t", {"x": n}, f"On branch main\n{n} files changed") for n in (1, 2)]
    model_runner = ScriptedModelRunner("git-status-1.0.16", "On branch main\n1 files changed")
    observation = await simulator(model_runner, rows=rows).simulate(CALL, Session("s"), deadline_s=5)
    assert observation.text == "On branch main\n1 files changed"
    assert "package-like" in model_runner.seen[1][0][-1]["content"]


async def test_a_weather_answer_for_another_city_is_refused_when_recordings_echo_the_city():
    rows = [
        real_row("get_weather", {"city": city}, f"{city}: {t} C, {sky}")
        for city, t, sky in (("Paris", 12, "cloudy"), ("Tokyo", 20, "sunny"))
    ]
    lima = Call("mcp", "srv", "get_weather", {"city": "Lima"}, "s")
    model_runner = ScriptedModelRunner("Paris: 12 C, cloudy", "Paris: 12 C, cloudy")
    refused = await simulator(model_runner, rows=rows).simulate(lima, Session("s"), deadline_s=5)
    assert refused.is_error and "'Lima'" in refused.text and "Paris" not in refused.text
    assert "does not name 'Lima'" in model_runner.seen[1][0][-1]["content"]
    model_runner = ScriptedModelRunner("Paris: 12 C, cloudy", "Lima: 24 C, sunny")
    answered = await simulator(model_runner, rows=rows).simulate(lima, Session("s"), deadline_s=5)
    assert answered.text == "Lima: 24 C, sunny"


async def test_a_datetime_in_a_field_recordings_fill_with_words_is_refused():
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}, "sky": {"type": "string"}},
        "required": ["city", "temp_c", "sky"],
    }
    rows = [
        {**real_row("t", {"x": n}, ""), "observation": Observation([], Provenance.REAL, structured=answer).to_json()}
        for n, answer in enumerate(
            [{"city": "Oslo", "temp_c": 3, "sky": "snowing"}, {"city": "Lima", "temp_c": 24, "sky": "sunny"}]
        )
    ]
    bad = json.dumps({"city": "Lima", "temp_c": 24, "sky": "2026-11-28T01:22:50"})
    good = json.dumps({"city": "Lima", "temp_c": 24, "sky": "sunny"})
    model_runner = ScriptedModelRunner(bad, good)
    observation = await simulator(model_runner, rows=rows, schema=schema).simulate(CALL, Session("s"), deadline_s=5)
    assert observation.structured == {"city": "Lima", "temp_c": 24, "sky": "sunny"}
    assert "the answer's sky holds a date or time" in model_runner.seen[1][0][-1]["content"]


async def test_a_steered_retry_keeps_the_perturbation_and_its_check():
    from backends.world_model.steering import mislead

    truth = Observation([{"type": "text", "text": "price 30"}], Provenance.REAL)
    model_runner = ScriptedModelRunner(DEGENERATE, "price 30", "price 12")
    observation = await simulator(model_runner).simulate(CALL, Session("s"), deadline_s=5, steer=mislead(truth))
    assert observation.is_error and "same as the real answer" in observation.text  # the steer's check held on the retry
    retry = model_runner.seen[1][0][-1]["content"]
    assert (
        retry.startswith("## Your previous answer was refused") and "## Perturbation for this action: mislead" in retry
    )


async def test_a_degenerate_screen_is_refused_on_the_shell():
    call = Call("shell", "shell", "shell_exec", {"command": "cat notes.txt"}, "s")
    talk = (
        "cat notes.txt\nThis is the first action in the action space described by the terminal.\n[200] "
        "agent@sandbox:/workspace$"
    )
    good = "cat notes.txt\nbuy milk\n[0] agent@sandbox:/workspace$"
    sim = WorldModelSimulator(ScriptedModelRunner(talk, good), domains={"shell": TerminalDomain()})
    observation = await sim.simulate(call, Session("s"), deadline_s=5)
    assert (
        ShellResult.from_structured(observation.structured).output == "buy milk"
        and observation.structured["exit_code"] == 0
    )


async def test_an_http_answer_naming_another_city_is_refused():
    from backends.http.messages import encode_body, observation_of, response_record

    def exchange(path, body):
        record = response_record(
            200, "OK", [("Content-Type", "application/json")], encode_body(body.encode(), limit=10_000), decoded=False
        )
        arguments = {"method": "GET", "path": path}
        return {"id": path, "channel": "http", "server": "api.test", "tool": "GET", "arguments": arguments,
                "observation": observation_of(record, Provenance.REAL).to_json()}  # fmt: skip

    rows = [
        exchange("/weather/paris", '{"town": "Paris", "sky": "cloudy"}'),
        exchange("/weather/tokyo", '{"town": "Tokyo", "sky": "sunny"}'),
    ]
    sim = WorldModelSimulator(
        ScriptedModelRunner(
            *['HTTP/1.1 200 OK\nContent-Type: application/json\n\n{"town": "Paris", "sky": "cloudy"}'] * 2
        ),
        domains={"http": HttpDomain(records_for=lambda call: rows)},
    )
    call = Call("http", "api.test", "GET", {"method": "GET", "path": "/weather/lima"}, "s")
    observation = await sim.simulate(call, Session("s"), deadline_s=5)
    assert (
        observation.is_error
        and "'lima'" in observation.text
        and observation.text.startswith("simroute: world model failed")
    )


ECHO = Call("mcp", "srv", "echo", {"text": "shadowed-2"}, "s")


async def test_refused_twice_a_tool_whose_recordings_are_one_shape_answers_from_them():
    """An echo tool recorded for two texts answers a third from its recordings once the
    model's answers (which do not name the text) are refused twice: `replay-aligned`."""
    rows = [real_row("echo", {"text": text}, text) for text in ("shadowed-0", "shadowed-1")]
    model_runner = ScriptedModelRunner("nothing useful here", "still nothing useful")
    observation = await simulator(model_runner, rows=rows).simulate(ECHO, Session("s"), deadline_s=5)
    assert observation.text == "shadowed-2" and not observation.is_error and observation.provenance is Provenance.SIM
    assert observation.source is not None and observation.source.sub == "replay-aligned" and len(model_runner.seen) == 2
    # Recordings that are not one shape (the answer holds more than the echoed text) determine nothing.
    rows = [real_row("echo", {"text": text}, f"{text} at {n}") for n, text in ((1, "shadowed-0"), (7, "shadowed-1"))]
    failed = await simulator(ScriptedModelRunner("nothing", "nothing"), rows=rows).simulate(
        ECHO, Session("s"), deadline_s=5
    )
    assert failed.is_error and failed.text.startswith("simroute: world model failed") and failed.source is None


async def test_through_an_openai_compatible_model_stub():
    """The same path with a served model (tests/kit/model_stub.py): `x:1:1:…` then a good
    answer gives the good answer; degenerate twice gives the clear error."""
    from kit.model_stub import ModelStub

    from backends.world_model.openai_runner import OpenAICompatibleRunner

    script = [DEGENERATE, "hello", DEGENERATE, DEGENERATE]
    with ModelStub(lambda body: script.pop(0)) as stub:
        model_runner = OpenAICompatibleRunner(stub.url)
        try:
            sim = WorldModelSimulator(model_runner, domains=simulator(model_runner).domains, constrained_output=False)
            answered = await sim.simulate(CALL, Session("s"), deadline_s=10)
            failed = await sim.simulate(CALL, Session("s2"), deadline_s=10)
        finally:
            await model_runner.aclose()
    assert answered.text == "hello" and not answered.is_error
    assert failed.is_error and failed.text.startswith("simroute: world model failed") and DEGENERATE not in failed.text
    assert "## Your previous answer was refused" in stub.bodies[1]["messages"][-1]["content"]
