"""The world state on the sim route, through the engine: simulated shell steps answered
from the session's state (no model call), real steps teaching it, a model's invented
file kept so a later read agrees, secrets redacted before the state holds them."""

from __future__ import annotations

from kit.engine import make_engine
from kit.shell_world import StandInSandbox

from backends.shell.screen import ShellResult
from backends.world_state.session import WorldState
from backends.world_state.shell import run
from backends.world_state.simulation import StatefulSimulator
from calls import Call, Observation, Provenance, Route, Session, Source
from policies.chain import default_policies
from policies.rules import parse_rule
from router.addons.world_state import WorldStateKeeper


def shell(command: str, session: str = "s") -> Call:
    return Call("shell", "shell", "shell_exec", {"command": command}, session)


def screen(result: ShellResult, provenance: Provenance) -> Observation:
    return Observation(
        [{"type": "text", "text": result.text()}], provenance, is_error=result.is_error, structured=result.structured()
    )


class ScreenModel:
    """A world model that answers every command with the same screen (and counts its calls)."""

    def __init__(self, output: str | None) -> None:
        self.output, self.calls = output, 0

    async def simulate(self, call, session, *, deadline_s, background=False, steer=None):
        self.calls += 1
        if self.output is None:  # the model failed: simroute's own error, as the simulator makes it
            return Observation.error("simroute: world model failed: unreachable", Provenance.SIM)
        answer = screen(ShellResult(self.output, 0, "/workspace"), Provenance.SIM)
        answer.source = Source(sub="model")  # as WorldModelSimulator marks what the model wrote
        return answer


async def stateful_engine(tmp_path, model: ScreenModel, **options):
    engine, store = await make_engine(tmp_path, **options)
    engine.simulator = StatefulSimulator(model)
    engine.addons.add(WorldStateKeeper())
    return engine, store


async def test_a_simulated_shell_answers_from_its_state_with_coreutils_text_and_no_model_call(tmp_path):
    model = ScreenModel("never asked")
    engine, _ = await stateful_engine(tmp_path, model, mode=Route.SIM)
    session, answers = Session("s"), []
    for command in ("echo hi > f", "cat f", "rm f", "cat f"):
        answers.append((await engine.handle(shell(command), session, StandInSandbox())).observation)
    assert answers[1].structured["output"] == "hi\n" and answers[1].structured["exit_code"] == 0
    assert (
        answers[3].structured["output"] == "cat: f: No such file or directory\n"
        and answers[3].structured["exit_code"] == 1
    )
    assert {a.source.sub for a in answers} == {"state"} and {a.provenance for a in answers} == {Provenance.SIM}
    assert model.calls == 0


async def test_real_then_simulated_then_real_steps_tell_one_world(tmp_path):
    cat_is_simulated = parse_rule({"match": {"arguments": {"command": "cat *"}}, "route": "sim"})
    model = ScreenModel("never asked")
    engine, _ = await stateful_engine(tmp_path, model)
    engine.policies = default_policies(rules=[cat_is_simulated], mode=Route.REAL)
    session, sandbox = Session("s"), StandInSandbox()
    await engine.handle(shell("echo alpha > notes.txt"), session, sandbox)  # real
    first = (await engine.handle(shell("cat notes.txt"), session, sandbox)).observation  # simulated, from state
    await engine.handle(shell("echo beta >> notes.txt"), session, sandbox)  # real again
    second = (await engine.handle(shell("cat notes.txt"), session, sandbox)).observation
    assert (first.provenance, first.structured["output"]) == (Provenance.SIM, "alpha\n")
    assert second.structured["output"] == "alpha\nbeta\n" and second.source.sub == "state"
    assert model.calls == 0


async def test_a_file_the_model_invented_reads_the_same_the_second_time(tmp_path):
    listed_is_real = parse_rule({"match": {"arguments": {"command": "ls*"}}, "route": "real"})
    model = ScreenModel("the model's guess at the report\n")
    engine, _ = await stateful_engine(tmp_path, model)
    engine.policies = default_policies(rules=[listed_is_real], mode=Route.SIM)
    session, sandbox = Session("s"), StandInSandbox()
    run(sandbox.world, "echo 'the real report' > report.txt")  # only the real side holds it
    listing = (await engine.handle(shell("ls"), session, sandbox)).observation
    assert listing.provenance is Provenance.REAL and listing.structured["output"] == "report.txt\n"
    first = (await engine.handle(shell("cat report.txt"), session, sandbox)).observation
    second = (await engine.handle(shell("cat report.txt"), session, sandbox)).observation
    assert first.source.sub == "model+state" and model.calls == 1  # the state knew the name, not the text
    assert second.structured["output"] == first.structured["output"] == "the model's guess at the report\n"
    assert second.source.sub == "state" and second.source.extra.get("invented") is True
    assert session.slice(WorldState).shell.fs.lookup("/workspace/report.txt").invented


async def test_secrets_reach_the_state_redacted_as_records_are(tmp_path):
    from records.redaction import Redactor

    model = ScreenModel("never asked")
    engine, _ = await stateful_engine(tmp_path, model, mode=Route.SIM)
    engine.redactor = Redactor(key=b"test-key")
    session = Session("s")
    secret = "sk-proj-" + "a1B2c3D4" * 6
    await engine.handle(shell(f"echo 'OPENAI_API_KEY={secret}' > .env"), session, StandInSandbox())
    answer = (await engine.handle(shell("cat .env"), session, StandInSandbox())).observation
    assert secret not in answer.text and secret not in str(session.slice(WorldState).fields())


async def test_an_off_switch_sends_the_calls_to_the_model(tmp_path):
    model = ScreenModel("from the model\n")
    engine, _ = await make_engine(tmp_path, mode=Route.SIM)
    engine.simulator = StatefulSimulator(model, on_for=lambda channel, server: channel != "shell")
    engine.addons.add(WorldStateKeeper(on_for=lambda channel, server: channel != "shell"))
    session = Session("s")
    await engine.handle(shell("echo hi > f"), session, StandInSandbox())
    answer = (await engine.handle(shell("cat f"), session, StandInSandbox())).observation
    assert answer.structured["output"] == "from the model\n" and answer.source.sub == "model" and model.calls == 2
    assert session.find(WorldState) is None


def request(method: str, path: str, body=None) -> Call:
    arguments = {
        "method": method,
        "url": f"https://api.test{path}",
        "path": path,
        "query": {},
        "headers": {},
        "body": body,
    }
    return Call("http", "api.test", method, arguments, "s")


async def test_a_json_apis_resources_answer_simulated_reads_and_perturbations_apply_on_top(tmp_path):
    import json

    from backends.http.messages import encode_body, observation_of, response_record
    from policies.perturbation import PlanConfig, compile_plan
    from router.addons.perturbation.addon import Perturber

    async def api(call):  # the real API: it made item 7
        body = json.dumps({"id": 7, **call.arguments["body"]}).encode()
        structured = response_record(
            201, "", [("Content-Type", "application/json")], encode_body(body, limit=len(body)), decoded=False
        )
        return observation_of(structured, Provenance.REAL)

    model = ScreenModel("never asked")
    engine, store = await stateful_engine(tmp_path, model)
    reads_simulated = parse_rule({"match": {"channel": "http", "method": "GET"}, "route": "sim"})
    engine.policies = default_policies(rules=[reads_simulated], mode=Route.REAL)
    plan = PlanConfig.model_validate(
        {"seed": 1, "rules": [{"kind": "empty", "every": 2, "match": {"channel": "http"}}]}
    )
    engine.addons.add(Perturber({"p": compile_plan("p", plan)}, default="p"))
    session = Session("s")
    await engine.handle(request("POST", "/items", {"name": "kept"}), session, api)  # real (call 1 of the plan)
    read = (await engine.handle(request("GET", "/items/7"), session, api)).observation  # simulated, emptied (call 2)
    again = (await engine.handle(request("GET", "/items/7"), session, api)).observation  # simulated (call 3)
    assert json.loads(again.structured["body"]) == {"id": 7, "name": "kept"} and again.source.sub == "state"
    # Its text emptied.
    assert json.loads(read.structured["body"]) == {"id": 7, "name": ""} and read.provenance is Provenance.NONE
    row = (await store.recent())[1]
    assert row["perturbation"]["kind"] == "empty" and row["unperturbed"]["source"]["sub"] == "state"
    assert model.calls == 0


async def test_a_failed_model_answer_carries_no_source(tmp_path):
    """simroute's own error in the model's place is not the model's answer: no `sub`."""
    engine, _ = await stateful_engine(tmp_path, ScreenModel(None), mode=Route.SIM)
    failed = (await engine.handle(shell("uname -a"), Session("s"), StandInSandbox())).observation
    assert failed.is_error and failed.text.startswith("simroute: world model failed") and failed.source is None
