"""The `mislead` steer: the world model is shown the truth and told not to give it; an
answer that is the truth again, or an error, fails the check and is asked for once
more before a clear error; a wrong, well-formed answer passes."""

import json

from backends.world_model.mcp_domain import McpDomain
from backends.world_model.simulator import WorldModelSimulator
from backends.world_model.steering import differs, mislead
from calls import Call, Observation, Provenance, Session

SCHEMA = {
    "type": "object",
    "properties": {"product": {"type": "string"}, "price": {"type": "number"}},
    "required": ["product", "price"],
}
TRUTH = Observation(
    [{"type": "text", "text": '{"product": "lamp", "price": 30}'}],
    Provenance.REAL,
    structured={"product": "lamp", "price": 30},
)
CALL = Call("mcp", "shop", "get_price", {"product": "lamp"}, "s")


class ScriptedModelRunner:
    def __init__(self, *answers):
        self.answers, self.seen = list(answers), []

    async def start(self):
        pass

    def count_tokens(self, text):
        return len(text) // 4

    async def complete(self, messages, **kwargs):
        from backends.world_model.model_runner import Completion

        self.seen.append(messages)
        return Completion(
            f"<predicted_observation>{self.answers.pop(0)}</predicted_observation>", 100, 10, 100, 0.01, "stop"
        )

    async def aclose(self):
        pass


def simulator(model_runner):
    domain = McpDomain(
        tools_for=lambda server: [{"name": "get_price"}],
        records_for=lambda call: (),
        output_schema_for=lambda server, tool: SCHEMA,
    )
    return WorldModelSimulator(model_runner, domains={"mcp": domain})


def test_differs_compares_values_not_formatting():
    same = Observation([{"type": "text", "text": '{"price":30,"product":"lamp"}'}], Provenance.SIM)
    assert differs(same, Observation([{"type": "text", "text": '{"product": "lamp", "price": 30}'}], Provenance.REAL))
    assert differs(Observation.error("no"), TRUTH) == "an error instead of misleading data"
    wrong = Observation([{"type": "text", "text": "x"}], Provenance.SIM, structured={"product": "lamp", "price": 12})
    assert differs(wrong, TRUTH) is None


async def test_a_misleading_answer_is_well_formed_differs_from_the_truth_and_its_prompt_shows_the_truth():
    model_runner = ScriptedModelRunner(
        json.dumps({"product": "lamp", "price": 30}), json.dumps({"product": "lamp", "price": 12.5})
    )
    observation = await simulator(model_runner).simulate(CALL, Session("s"), deadline_s=5, steer=mislead(TRUTH))
    assert not observation.is_error and observation.structured == {"product": "lamp", "price": 12.5}
    assert (
        observation.provenance is Provenance.SIM and len(model_runner.seen) == 2
    )  # the truth again was asked for once more
    last = model_runner.seen[0][-1]["content"]
    assert last.startswith("## Perturbation for this action: mislead") and '"price": 30' in last
    assert "mislead" not in model_runner.seen[0][0]["content"]  # the system message (the cached prefix) is untouched


async def test_the_truth_twice_is_a_clear_simulation_error():
    model_runner = ScriptedModelRunner(
        json.dumps({"product": "lamp", "price": 30}), json.dumps({"price": 30, "product": "lamp"})
    )
    observation = await simulator(model_runner).simulate(CALL, Session("s"), deadline_s=5, steer=mislead(TRUTH))
    assert observation.is_error and observation.provenance is Provenance.SIM
    assert "the same as the real answer" in observation.text
