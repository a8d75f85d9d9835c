"""The order the sim route asks in (backends/world_state/simulation.py), for MCP: a
recorded real session aligned with this one first, the model for the rest, and never
an aligned recording where the model is told a world document."""

from __future__ import annotations

from backends.world_state.simulation import StatefulSimulator
from calls import Call, Observation, Provenance, Session, Source, WorldDocuments

CALL = Call("mcp", "time", "get_current_time", {"timezone": "UTC"}, "s")


class Aligned:
    """An aligned recording that always has the answer."""

    def __init__(self) -> None:
        self.asked = 0

    async def answer(self, call, session):
        self.asked += 1
        return type(
            "Found",
            (),
            {
                "observation": Observation([{"type": "text", "text": "12:00 recorded"}], Provenance.SIM),
                "record_id": "r1",
            },
        )


class Model:
    def __init__(self, world_document: str | None = None) -> None:
        self.world_document = world_document

    async def simulate(self, call, session, *, deadline_s, background=False, steer=None):
        answer = Observation([{"type": "text", "text": "12:34 written"}], Provenance.SIM)
        answer.source = Source(sub="model")
        return answer


async def test_an_aligned_recording_answers_first_unless_a_world_is_told():
    aligned = Aligned()
    plain = await StatefulSimulator(Model(), aligned=aligned).simulate(CALL, Session("s"), deadline_s=5)
    assert (
        plain.text == "12:00 recorded"
        and plain.source.sub == "replay-aligned"
        and plain.source.extra == {"record": "r1"}
    )
    episode = Session("e", slices={WorldDocuments: WorldDocuments({"*": "A fictional clock shop."})})
    told = await StatefulSimulator(Model(), aligned=aligned).simulate(CALL, episode, deadline_s=5)
    configured = await StatefulSimulator(Model(world_document="A fictional clock shop."), aligned=aligned).simulate(
        CALL, Session("t"), deadline_s=5
    )
    assert told.text == configured.text == "12:34 written" and told.source.sub == configured.source.sub == "model"
    assert aligned.asked == 1
