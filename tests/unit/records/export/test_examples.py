"""A session's records to examples, with the live prompt builder (router/runtime/training_prompts.py)."""

import pytest

from calls import Call, Decision, Observation, Provenance, Route, Session, Turn
from records.export.examples import SessionExamples, Skips
from records.export.options import ExportFilter
from records.record import Record
from records.store.sqlite.store import SQLiteStore
from router.config import Config
from router.runtime.training_prompts import LivePrompts

TOOLS = [
    {
        "name": "forecast",
        "description": "A forecast.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]


@pytest.fixture
async def builder(tmp_path):
    store = await SQLiteStore(tmp_path / "records.db").open()
    await store.save_tool_snapshot("weather", TOOLS)
    yield LivePrompts(Config(), store)
    await store.aclose()


def text(value: str, provenance: Provenance, **kwargs) -> Observation:
    return Observation([{"type": "text", "text": value}], provenance, **kwargs)


def record(step: int, served: Observation, *, route: Route = Route.REAL, city: str = "Oslo", **changes) -> Record:
    made = Record(
        call=Call("mcp", "weather", "forecast", {"city": city}, "s1"),
        decision=Decision(route, "mode", ""),
        served=served,
        step=step,
        call_key=f"forecast-{city}",
    )
    for name, value in changes.items():
        setattr(made, name, value)
    return made


def feeder(builder, **where) -> tuple[SessionExamples, Skips]:
    skips = Skips()
    return SessionExamples(builder, ExportFilter(**where), skips, pairs=True), skips


def test_only_real_observations_are_targets_and_other_ones_are_marked_context(builder):
    examples, skips = feeder(builder)
    assert examples.feed(record(0, text("rain", Provenance.SIM), route=Route.SIM, city="Rome")) is None
    assert examples.feed(record(1, text("fog", Provenance.REPLAY), route=Route.REPLAY, city="Bern")) is None
    example = examples.feed(record(2, text("sunny", Provenance.REAL)))
    assert skips.no_real_observation == 2
    assert example is not None and example.answer == "sunny" and example.domain == "MCP"
    assert example.target == "**Environment Observation:**\nsunny"
    assert [m.get("provenance") for m in example.prompt if m["role"] == "assistant"] == ["sim", "replay"]
    assert "rain" in example.prompt[2]["content"] and "fog" in example.prompt[4]["content"]  # context the agent saw


def test_a_forks_answer_is_context_never_a_target_even_when_asked_for(builder):
    # The real program's answer, but on a throwaway copy: never a real observation.
    examples, skips = feeder(builder, provenances=("fork",))
    assert examples.feed(record(0, text("removed", Provenance.FORK), route=Route.FORK)) is None
    assert skips.no_real_observation == 1
    examples, _ = feeder(builder)
    examples.feed(record(0, text("removed", Provenance.FORK), route=Route.FORK, city="Rome"))
    example = examples.feed(record(1, text("sunny", Provenance.REAL)))
    assert example is not None and [m.get("provenance") for m in example.prompt if m["role"] == "assistant"] == ["fork"]


def test_a_shadowed_call_served_by_the_model_is_a_target_by_its_real_side(builder):
    examples, _ = feeder(builder)
    shadowed = record(
        0,
        text("rain", Provenance.SIM),
        route=Route.SHADOW,
        shadow=text("sunny", Provenance.REAL),
        divergence=0.5,
        divergence_evidence={"divergent": ["$"], "masked": []},
    )
    example = examples.feed(shadowed)
    assert (
        example is not None and example.answer == "sunny" and example.rejected == "**Environment Observation:**\nrain"
    )


def test_preference_pairs_only_where_the_sides_diverged_beyond_noise(builder):
    examples, _ = feeder(builder)
    real, sim = text("sunny 21 C", Provenance.REAL), text("sunny 19 C", Provenance.SIM)
    masked = record(
        0, real, route=Route.SHADOW, shadow=sim, divergence=0.0, divergence_evidence={"divergent": [], "masked": ["$"]}
    )
    assert examples.feed(masked).rejected is None  # the difference was noise
    diverged = record(
        1, real, route=Route.SHADOW, shadow=sim, divergence=0.3, divergence_evidence={"divergent": ["$"], "masked": []}
    )
    assert examples.feed(diverged).rejected == "**Environment Observation:**\nsunny 19 C"
    failed = text("simroute: world model failed: timed out", Provenance.SIM, is_error=True)
    # No prediction.
    assert examples.feed(record(2, real, route=Route.SHADOW, shadow=failed, divergence=1.0)).rejected is None
    hard, _ = feeder(builder, min_divergence=0.5)
    assert hard.feed(record(0, real, route=Route.SHADOW, shadow=sim, divergence=0.3)) is None


def test_unfinished_calls_are_neither_history_nor_targets_and_truncated_bodies_not_targets(builder):
    examples, skips = feeder(builder)
    assert examples.feed(record(0, text("", Provenance.NONE), status="started")) is None
    truncated = text("half a bod", Provenance.REAL, structured={"truncated": True})
    assert examples.feed(record(1, truncated)) is None
    example = examples.feed(record(2, text("sunny", Provenance.REAL), city="Rome"))
    assert skips.unseen == 1 and skips.truncated == 1
    # Only the truncated call is history.
    assert [m["role"] for m in example.prompt] == [
        "system",
        "user",
        "assistant",
        "user",
    ]


def test_the_prompt_is_the_live_simulators_and_the_target_is_the_next_prompts_turn(builder):
    examples, _ = feeder(builder)
    first = examples.feed(record(0, text("sunny", Provenance.REAL)))
    second = examples.feed(record(1, text("rain", Provenance.REAL), city="Rome"))
    session = Session("s1", history=[Turn(first.record.call, first.record.served)])
    live = builder.simulator.messages_for(second.record.call, session)
    assert [{"role": m["role"], "content": m["content"]} for m in second.prompt] == live
    # What the model is trained to write is what the next prompt shows.
    assert second.prompt[2]["content"] == first.target


def test_a_record_the_domain_cannot_prompt_is_counted_and_the_session_goes_on(builder, caplog):
    class Refusing(type(builder)):
        def rendered(self, call, history, observation):
            if call.arguments.get("city") == "Nowhere":
                raise ValueError("no such place")
            return super().rendered(call, history, observation)

    refusing = Refusing.__new__(Refusing)
    refusing.simulator = builder.simulator
    examples, skips = feeder(refusing)
    assert examples.feed(record(0, text("?", Provenance.REAL), city="Nowhere")) is None
    assert examples.feed(record(1, text("sunny", Provenance.REAL))).answer == "sunny"
    assert skips.unbuildable == 1 and "gives no prompt: ValueError: no such place" in caplog.text


def test_a_perturbed_answer_is_never_a_target_but_the_real_answer_kept_beside_it_is(builder):
    examples, skips = feeder(builder)
    fault = {"kind": "error", "rule": 0, "seed": 7, "n": 1}
    # A fault simroute made up (provenance none) with no real answer: no example.
    assert (
        examples.feed(record(0, text("simroute: rate limited", Provenance.NONE, is_error=True), perturbation=fault))
        is None
    )
    # A truncated real answer: the agent saw "sun", the real side said "sunny"; the target is "sunny".
    cut = {"kind": "truncate", "rule": 0, "seed": 7, "n": 2}
    example = examples.feed(
        record(
            1, text("sun", Provenance.REAL), city="Rome", perturbation=cut, unperturbed=text("sunny", Provenance.REAL)
        )
    )
    assert skips.no_real_observation == 1
    assert example is not None and example.answer == "sunny" and "sun\n" not in example.target
