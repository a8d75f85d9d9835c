"""WorldModelSimulator with a scripted model runner: every model failure becomes a
clear error observation tagged sim, never an exception or an empty success."""

import asyncio
import json

import pytest

from backends.world_model.mcp_domain import McpDomain
from backends.world_model.model_runner import Completion, ContextOverflow, ModelUnavailable, WorldModelTimeout
from backends.world_model.simulator import WorldModelSimulator
from calls import Call, Observation, Provenance, Session, Source, Turn

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


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
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return Completion(answer, 100, 10, 100, 0.01, "stop", model="scripted.gguf")

    async def aclose(self):
        pass


def simulator(model_runner, *, schema=None, constrained=True, rows=()):
    domain = McpDomain(
        tools_for=lambda server: [{"name": "t", "description": "a tool"}],
        records_for=lambda call: list(rows),
        output_schema_for=lambda server, tool: schema,
    )
    return WorldModelSimulator(model_runner, domains={"mcp": domain}, constrained_output=constrained)


def real_row(arguments, text, *, is_error=False, session="old"):
    return {
        "session": session,
        "channel": "mcp",
        "server": "srv",
        "tool": "t",
        "arguments": arguments,
        "observation": {"content": [{"type": "text", "text": text}], "is_error": is_error, "structured": None},
    }


CALL = Call("mcp", "srv", "t", {"x": 1}, "s")


async def test_text_prediction_and_history_of_this_server_only():
    model_runner = ScriptedModelRunner("<predicted_observation>hello</predicted_observation>")
    session = Session(
        "s",
        history=[
            Turn(
                Call("mcp", "srv", "t", {"x": 0}, "s"), Observation([{"type": "text", "text": "seen"}], Provenance.REAL)
            ),
            Turn(
                Call("mcp", "other", "t", {"x": 0}, "s"),
                Observation([{"type": "text", "text": "elsewhere"}], Provenance.REAL),
            ),
        ],
    )
    observation = await simulator(model_runner).simulate(CALL, session, deadline_s=5)
    assert observation.text == "hello" and observation.provenance is Provenance.SIM and not observation.is_error
    messages = model_runner.seen[0][0]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert "seen" in messages[2]["content"] and all("elsewhere" not in m["content"] for m in messages)
    assert model_runner.seen[0][1]["session_id"] == "s"


async def test_structured_prediction_is_schema_valid():
    observation = await simulator(ScriptedModelRunner('{"n": 3}'), schema=SCHEMA).simulate(
        CALL, Session("s"), deadline_s=5
    )
    assert observation.structured == {"n": 3} and '"n": 3' in observation.text


async def test_the_error_form_is_an_error_result_and_recorded_errors_are_shown_in_it():
    model_runner = ScriptedModelRunner("Error: no such file: /x")
    rows = [real_row({"x": 1}, "no such file: /y", is_error=True)]
    observation = await simulator(model_runner, schema=SCHEMA, rows=rows).simulate(CALL, Session("s"), deadline_s=5)
    assert observation.is_error and observation.text == "no such file: /x" and observation.provenance is Provenance.SIM
    messages, options = model_runner.seen[0]
    assert messages[-2]["content"] == "**Environment Observation:**\nError: no such file: /y"
    # Every recorded answer to this call is an error: only the error form may be generated.
    assert options["grammar"].startswith("root ::= error\n") and options["json_schema"] == SCHEMA


async def test_the_recorded_outcome_of_the_same_call_holds_the_answer_to_it_and_text_ends_at_a_blank_line():
    model_runner = ScriptedModelRunner("Deleted note 1", "x", "y")
    done = [real_row({"x": 1}, "Deleted note 1")]
    await simulator(model_runner, rows=done).simulate(CALL, Session("s"), deadline_s=5)
    options = model_runner.seen[0][1]
    assert options["grammar"].startswith("root ::= result\n")  # recorded a success: no error form
    assert "\n\n" in options["stop"]  # recorded answers have no blank line: one ends the answer
    other_call = [
        real_row({"x": 2}, "Deleted note 2"),
        real_row({"x": 1}, "gone", is_error=True, session="o2"),
        real_row({"x": 1}, "ok\n\nmore", session="o3"),
    ]
    await simulator(model_runner, rows=other_call).simulate(CALL, Session("s"), deadline_s=5)
    options = model_runner.seen[1][1]
    assert options["grammar"].startswith("root ::= result | error\n")  # the records disagree: either
    assert "\n\n" not in options["stop"]


async def test_scaffolding_in_a_text_answer_is_asked_for_once_more():
    model_runner = ScriptedModelRunner("### Turn 3\n**Action:** more", "hello")
    observation = await simulator(model_runner).simulate(CALL, Session("s"), deadline_s=5)
    assert observation.text == "hello" and not observation.is_error
    assert [options["seed_offset"] for _, options in model_runner.seen] == [0, 1]
    model_runner = ScriptedModelRunner('{"name": "t", "inputSchema": {}}', "**Action:**")
    failed = await simulator(model_runner).simulate(CALL, Session("s"), deadline_s=5)
    assert failed.is_error and "malformed, twice" in failed.text and "prompt scaffolding" in failed.text


async def test_agreeing_records_sample_at_temperature_zero_and_the_budget_follows_answer_sizes():
    model_runner = ScriptedModelRunner("v1.2.3", "v1.2.3")
    rows = [real_row({"x": 1}, "v1.2.3", session=f"old{i}") for i in range(3)]
    await simulator(model_runner, rows=rows).simulate(CALL, Session("s"), deadline_s=5)
    options = model_runner.seen[0][1]
    assert options["temperature"] == 0.0
    assert options["max_tokens"] == 48  # a one-line answer: the floor, not the configured 256
    # Disagreeing records: the configured temperature.
    rows.append(real_row({"x": 1}, "v1.2.4", session="old9"))
    await simulator(model_runner, rows=rows).simulate(CALL, Session("s"), deadline_s=5)
    assert model_runner.seen[1][1]["temperature"] is None


async def test_unconstrained_model_runners_get_one_retry_then_a_clear_error():
    retried = await simulator(ScriptedModelRunner('{"n": "x"}', '{"n": 4}'), schema=SCHEMA, constrained=False).simulate(
        CALL, Session("s"), deadline_s=5
    )
    assert retried.structured == {"n": 4}
    failed = await simulator(ScriptedModelRunner('{"n": "x"}', "nope"), schema=SCHEMA, constrained=False).simulate(
        CALL, Session("s"), deadline_s=5
    )
    assert failed.is_error and "not a JSON object" in failed.text


@pytest.mark.parametrize(
    ("answer", "message"),  # a malformed answer is asked for twice
    [
        (WorldModelTimeout("did not finish within its 1s deadline"), "deadline"),
        (ContextOverflow("prompt of 5000 tokens"), "5000 tokens"),
        (ModelUnavailable("world model file not found: /x.gguf"), "/x.gguf"),
        ("<think>only thinking", "held no observation"),
    ],
)
async def test_model_failures_become_error_observations(answer, message):
    observation = await simulator(ScriptedModelRunner(answer, answer)).simulate(CALL, Session("s"), deadline_s=5)
    assert observation.is_error and observation.provenance is Provenance.SIM
    assert observation.text.startswith("simroute: world model failed:") and message in observation.text


async def test_background_work_is_told_the_model_is_down_and_other_failures_stay_answers():
    """Shadow work waits for a model that is down (a missing model is not its answer);
    a model that answered badly is still an answer, compared like any other."""
    from calls import SimulatorUnavailable

    down = ModelUnavailable("world model server http://127.0.0.1:9/v1 is unreachable")
    with pytest.raises(SimulatorUnavailable, match="unreachable"):
        await simulator(ScriptedModelRunner(down, down)).simulate(CALL, Session("s"), deadline_s=5, background=True)
    slow = WorldModelTimeout("did not finish within its 1s deadline")
    observation = await simulator(ScriptedModelRunner(slow, slow)).simulate(
        CALL, Session("s"), deadline_s=5, background=True
    )
    assert observation.is_error and "deadline" in observation.text


async def test_priority_lock_serves_the_agent_before_background_work():
    import asyncio

    from backends.world_model.model_access import PriorityLock

    lock = PriorityLock()
    order = []
    await lock.acquire()

    async def worker(name, priority):
        await lock.acquire(priority=priority)
        order.append(name)
        lock.release()

    tasks = [asyncio.create_task(worker("shadow-1", 1)), asyncio.create_task(worker("shadow-2", 1))]
    await asyncio.sleep(0)
    tasks.append(asyncio.create_task(worker("agent", 0)))
    await asyncio.sleep(0)
    lock.release()
    await asyncio.gather(*tasks)
    assert order == ["agent", "shadow-1", "shadow-2"]


async def test_a_channel_without_a_domain_is_a_clear_sim_error():
    observation = await simulator(ScriptedModelRunner()).simulate(
        Call("fax", "srv", "send", {}, "s"), Session("s"), deadline_s=5
    )
    assert observation.is_error and observation.provenance is Provenance.SIM and "'fax' channel" in observation.text


async def test_a_domain_refusal_answers_without_the_model():
    class Refusing(McpDomain):
        def refusal(self, call, session):
            return "no such element"

    model_runner = ScriptedModelRunner()
    domain = Refusing(tools_for=lambda s: [], output_schema_for=lambda s, t: None)
    observation = await WorldModelSimulator(model_runner, domains={"mcp": domain}).simulate(
        CALL, Session("s"), deadline_s=5
    )
    assert observation.is_error and observation.text == "no such element" and model_runner.seen == []


async def test_loading_the_model_is_not_charged_to_the_calls_deadline():
    class SlowToLoad(ScriptedModelRunner):
        async def start(self):
            await asyncio.sleep(0.3)  # longer than the call's whole deadline

        async def complete(self, messages, **kwargs):
            assert kwargs["deadline_s"] > 0.15  # the deadline left after loading is the call's own
            return await super().complete(messages, **kwargs)

    observation = await simulator(SlowToLoad("<predicted_observation>ready</predicted_observation>")).simulate(
        CALL, Session("s"), deadline_s=0.2
    )
    assert not observation.is_error and observation.text == "ready"


def test_commentary_about_the_server_is_not_a_tool_answer():
    """ "The server returns …" where the tool's recorded answers never talk that way is
    a description, not the answer: the checker says so (the simulator asks once more)."""
    from backends.world_model.checks import check_mcp

    said = Observation(
        [{"type": "text", "text": "The server returns a list of notes with the specified title."}], Provenance.SIM
    )
    assert "commentary" in check_mcp(said, recorded=["No notes.", "1. groceries"])
    assert check_mcp(said, recorded=["The server is up."]) is None  # this tool talks that way
    assert check_mcp(said) is None  # nothing recorded to judge by


@pytest.mark.parametrize("engine_name", ["openai", "llama"])
async def test_size_budgets_follow_the_recorded_answers_in_process_but_not_on_an_endpoint(engine_name):
    """router/runtime/simulated_side.py builds the simulator from the config: a tool whose real answers
    are a few tokens gets a small max_tokens in-process (llama), but on `engine: openai`
    (thinking models spend most of the budget thinking) the full world_model.max_tokens."""
    from router.config import parse_config
    from router.runtime.simulated_side import build_simulator

    world_model = {
        "engine": engine_name,
        "max_tokens": 512,
        **({"url": "http://127.0.0.1:9/v1"} if engine_name == "openai" else {}),
    }
    config = parse_config(json.dumps({"world_model": world_model}))

    class Store:  # what build_simulator reads from the store for an MCP call
        def tool_snapshot(self, server):
            return [{"name": "t", "description": "a tool"}]

    class Examples:  # ExampleLookup's interface: short recorded answers of the same tool
        exact_key_of = staticmethod(lambda call: "")

        def __call__(self, call):
            return [real_row({"x": n}, "ok", session=f"old{n}") for n in range(3)]

        async def prefetch(self, call):  # the rows are at hand: nothing to fetch ahead
            pass

    model_runner = ScriptedModelRunner("<predicted_observation>ok</predicted_observation>")
    sim = build_simulator(config, Store(), model_runner, Examples())
    observation = await sim.simulate(CALL, Session("s"), deadline_s=5)
    assert observation.text == "ok" and observation.provenance == Provenance.SIM
    [(_, asked)] = model_runner.seen
    if engine_name == "openai":
        assert asked["max_tokens"] == 512  # world_model.max_tokens, not a budget from the two-letter answers
    else:
        assert asked["max_tokens"] < 512  # the in-process model runner's budget follows the recorded sizes
        assert asked["max_tokens"] <= 64


async def test_the_models_answer_names_its_source_and_an_error_made_in_its_place_none():
    observation = await simulator(ScriptedModelRunner('{"n": 3}'), schema=SCHEMA).simulate(
        CALL, Session("s"), deadline_s=5
    )
    assert observation.source == Source(sub="model", model="scripted.gguf")
    assert observation.to_json()["source"] == {"sub": "model", "model": "scripted.gguf"}
    failed = await simulator(ScriptedModelRunner(WorldModelTimeout("too slow"))).simulate(
        CALL, Session("s"), deadline_s=5
    )
    assert failed.is_error and failed.provenance is Provenance.SIM and failed.source is None
