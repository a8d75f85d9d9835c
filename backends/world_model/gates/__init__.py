"""Gates on every world-model answer, before it reaches the agent (issue 37, item 4).

The stateless gates, pure functions of the answer, the call and the tool's real
recorded answers:
- `degenerate(text)`: long repetition, echoed prompt scaffolding, commentary about
  the simulation, a package-like token standing in for the tool's answer;
- `missing_entities(call, observation, examples)`: an entity the call named that
  the tool's answers always name is missing (Lima is not Paris);
- `unfit_fields(observation, examples)`: a field holds a value of another kind
  than the recorded answers hold there (a datetime in a weather answer's `sky`).

`screen_answer` runs them in that order. The simulator runs it on every answer
after the domain's checker and the steer's check (the session's world state reaches
the model as a steer whose check refuses a contradiction: a file the state holds is
not "missing", a deleted one does not come back; backends/world_state/simulation.py).
A refused answer is asked for once more with the problem stated
(steering.restated); refused again, it is the answer the tool's real recordings
determine (`templated_answer`), else a clear simulation error.
"""

from __future__ import annotations

from collections.abc import Sequence

from backends.world_model.gates.degenerate import degenerate
from backends.world_model.gates.entities import missing_entities
from backends.world_model.gates.fields import unfit_fields
from backends.world_model.gates.sources import answer_text, real_examples, repeatable, row_observation
from backends.world_model.gates.template import templated_answer
from backends.world_model.grounding import Row
from calls import Call, Observation

__all__ = [
    "SHAPED",
    "degenerate",
    "missing_entities",
    "real_examples",
    "repeatable",
    "screen_answer",
    "templated_answer",
    "unfit_fields",
]

# Channels whose answers have a tool's shape (fields, named entities); a screen or a
# page is judged for degeneracy only (their state is the world state's to judge).
SHAPED = ("mcp", "http")


def screen_answer(call: Call, observation: Observation, examples: Sequence[Row], *, context: str = "") -> str | None:
    """Why the stateless gates refuse `observation` as the answer to `call`, or None.
    `examples`: the tool's real answers (see sources.real_examples); `context`: text
    the answer may repeat (sources.repeatable)."""
    recorded = [answer_text(call.channel, row_observation(row)) for row in examples]
    problem = degenerate(answer_text(call.channel, observation), recorded=recorded, context=context)
    if problem is None and call.channel in SHAPED:
        problem = missing_entities(call, observation, examples) or unfit_fields(
            observation, examples, channel=call.channel
        )
    return problem
