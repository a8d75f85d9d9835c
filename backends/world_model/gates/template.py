"""An answer the tool's real recordings determine: when every recorded answer is one
fixed shape with the call's inputs put in (an `echo` tool: `{"text": "a"}` answers
`a`, `{"text": "b"}` answers `b`), the answer to a new input is that shape with the new
input put in. No model writes it; it is replay of a real answer under a renaming of
the call's values (the sub-provenance `replay-aligned`).

The simulator serves it only after the world model's answers were refused twice: it
is a fallback, not a shortcut, because a tool whose recordings fit a shape so far may
still answer otherwise (a real clock, a real counter) and the model, told the state,
may know better.

A shape is proven by the recordings themselves: at least MIN_EXAMPLES real successes
of the tool with different values of one input, the other inputs equal, and every
recording turned into every other one by putting that input's value in place of the
other's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise

from backends.world_model.echoed_inputs import MIN_EXAMPLES, inputs_of
from backends.world_model.gates.sources import row_observation
from backends.world_model.grounding import Row
from calls import Call, Observation, Provenance, Source
from shadow.compare.substitution import substituted

TEMPLATE = "replay-aligned"  # the sub-provenance: a real answer with the call's values put back


def templated_answer(call: Call, examples: Sequence[Row]) -> Observation | None:
    """The answer the recorded real answers (`examples`) determine for `call`, or None."""
    mine = inputs_of(call.arguments)
    if set(call.arguments) != set(mine):
        return None  # a non-string argument (a count, a flag) may change the answer in ways no recording shows
    recorded = [(inputs_of(row.get("arguments") or {}), row_observation(row)) for row in examples]
    recorded = [
        (inputs, observation)
        for inputs, observation in recorded
        if not observation.is_error and set(inputs) == set(mine)
    ]
    for name, value in mine.items():
        fitting = [(inputs[name], observation) for inputs, observation in recorded if _others_equal(inputs, mine, name)]
        if len({held for held, _ in fitting}) < MIN_EXAMPLES or not _one_shape(fitting):
            continue
        held, observation = fitting[-1]  # the newest: a tool's shape may have changed with its version
        answer = substituted(observation, held, value) if held != value else observation
        return replace(
            answer, provenance=Provenance.SIM, latency_s=0.0, source=Source(sub=TEMPLATE, extra={"template": name})
        )
    return None


def _others_equal(inputs: dict[str, str], mine: dict[str, str], name: str) -> bool:
    return all(inputs[other] == value for other, value in mine.items() if other != name)


def _one_shape(fitting: Sequence[tuple[str, Observation]]) -> bool:
    """Whether each recording becomes the next by putting the next one's value in its place
    (a chain over them all: equality is transitive), and the value appears in each answer."""
    for (value_a, a), (value_b, b) in pairwise(fitting):
        if value_a not in a.text and value_a not in str(a.structured):
            return False
        if value_a == value_b:
            if _same(a, b):
                continue
            return False
        if not _same(substituted(a, value_a, value_b), b):
            return False
    last_value, last = fitting[-1]
    return last_value in last.text or last_value in str(last.structured)


def _same(a: Observation, b: Observation) -> bool:
    return a.content == b.content and a.structured == b.structured
