"""The judging prompt and the verdict parser: one module, versioned.

The judge sees the action, the real observation (the reference) and a candidate,
and scores the candidate on AgentWorldBench's five dimensions, 1–5 each. The
wording is simroute's own, written from the dimensions' definitions and the
content classes the benchmark's judges use (deterministic content must match;
pre-existing content and runtime metadata such as ids, timestamps and sizes are
judged for format and plausibility only; live numbers may vary; the status class
must match). Change the wording, change `PROMPT_VERSION`: stored scores name the
version they were made with, and scores of two versions are not comparable.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from calls import Call, Observation

PROMPT_VERSION = "judge-v1"
DIMENSIONS = ("format", "factuality", "consistency", "realism", "quality")
# The largest observation shown in full; longer ones are cut in the middle (the
# judge's context is finite, and both ends carry most of an observation's shape).
MAX_OBSERVATION_CHARS = 6000

_DEFINITIONS = {
    "format": "Does the candidate have the reference's shape: the same kind of output (JSON, plain text, a terminal "
    "screen, a page snapshot), the same fields or sections, the same structure and encoding? 5: the same shape; "
    "1: a different kind of output or malformed.",
    "factuality": "Does the candidate state what the environment would state? Deterministic content (values the "
    "action determines, file contents, computed results) must match the reference; the status class (success vs "
    "error, found vs not found) must match. 5: every deterministic "
    "fact agrees; 1: the status or the key facts are wrong.",
    "consistency": "Is the candidate consistent with the action and with itself: does it answer this action with these "
    "arguments, without contradicting what it or the action says? 5: "
    "fully consistent; 1: answers another action or contradicts itself.",
    "realism": "Could a real environment have produced the candidate? Runtime metadata (ids, timestamps, sizes, "
    "ordering) and pre-existing content only need the right format and to be plausible, not to equal the reference; "
    "live numbers may differ by 10-20%. 5: indistinguishable from a real answer; 1: clearly invented or impossible.",
    "quality": "Overall, how well could an agent rely on the candidate in place of the reference: would it take the "
    "same next step? 5: the same decisions follow; 1: the agent would be misled.",
}

SYSTEM = (
    "You are a strict judge of environment simulations. An agent made a tool call (the action). A real environment "
    "answered it (the reference observation). A simulator predicted an answer (the candidate observation). Score the "
    "candidate against the reference on five dimensions, each an integer from 1 (worst) to 5 (best):\n\n"
    + "\n".join(f"- {name}: {text}" for name, text in _DEFINITIONS.items())
    + "\n\nDifferences that a second run of the real environment would also show (another id, another timestamp) "
    "cost nothing. Answer with one JSON object and nothing else: "
    '{"format": n, "factuality": n, "consistency": n, "realism": n, "quality": n, "reason": "one short sentence"}'
)

# The verdict's shape, sent as the response format where the server honours one.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        **{name: {"type": "integer", "enum": [1, 2, 3, 4, 5]} for name in DIMENSIONS},
        "reason": {"type": "string"},
    },
    "required": [*DIMENSIONS, "reason"],
}


@dataclass(frozen=True, slots=True)
class Verdict:
    scores: dict[str, int]  # each dimension, 1..5
    reason: str = ""

    @property
    def mean(self) -> float:
        return sum(self.scores.values()) / len(self.scores)

    @property
    def score_100(self) -> float:
        """AgentWorldBench's scale: the mean of the dimensions, (x - 1) / 4 * 100."""
        return to_100(self.mean)


def to_100(mean: float) -> float:
    return (mean - 1.0) / 4.0 * 100.0


def messages(call: Call, reference: Observation, candidate: Observation) -> list[dict[str, str]]:
    """The chat put to the judge for one pair."""
    action = json.dumps(
        {"tool": f"{call.server}.{call.tool}", "channel": call.channel, "arguments": call.arguments}, indent=2
    )
    user = (
        f"## Action\n```json\n{action}\n```\n\n"
        f"## Reference observation (real)\n{render(reference)}\n\n"
        f"## Candidate observation\n{render(candidate)}\n\n"
        "Score the candidate. Answer with the JSON object only."
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def retry_messages(first: list[dict[str, str]], answer: str, problem: str) -> list[dict[str, str]]:
    """The chat for the second and last attempt after an unreadable verdict."""
    return [
        *first,
        {"role": "assistant", "content": answer[:2000]},
        {
            "role": "user",
            "content": f"That answer could not be read ({problem}). Answer with the JSON object only, every score "
            "an integer 1-5.",
        },
    ]


def render(observation: Observation) -> str:
    """An observation as the judge reads it: its status, its text, its structured content."""
    parts = ["status: error" if observation.is_error else "status: ok"]
    text = observation.text
    if text:
        parts.append(f"text:\n```\n{_cut(text)}\n```")
    if observation.structured is not None:
        parts.append(
            f"structured:\n```json\n{_cut(json.dumps(observation.structured, ensure_ascii=False, sort_keys=True))}\n```"
        )
    return "\n".join(parts)


def _cut(text: str) -> str:
    if len(text) <= MAX_OBSERVATION_CHARS:
        return text
    half = MAX_OBSERVATION_CHARS // 2
    return f"{text[:half]}\n[… {len(text) - 2 * half} characters left out …]\n{text[-half:]}"


_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL)


def parse_verdict(text: str) -> Verdict:
    """The verdict in a judge's answer: the last JSON object in it holding the five
    scores. Raises ValueError saying what is wrong (no object, a missing or
    out-of-range score)."""
    text = _THINKING.sub("", text).split("</think>")[-1]
    found: dict[str, Any] | None = None
    decoder = json.JSONDecoder()
    for start in (match.start() for match in re.finditer(r"\{", text)):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict) and any(_key(name) in DIMENSIONS for name in value):
            found = value
    if found is None:
        raise ValueError("no JSON object with the scores")
    values = {_key(name): value for name, value in found.items()}
    scores = {}
    for name in DIMENSIONS:
        if name not in values:
            raise ValueError(f"no {name} score")
        scores[name] = _score(name, values[name])
    reason = values.get("reason")
    return Verdict(scores, reason if isinstance(reason, str) else "")


def _key(name: Any) -> str:
    return str(name).strip().lower()


def _score(name: str, value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"the {name} score is not a number: {value!r}")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or not 1 <= value <= 5:
        raise ValueError(f"the {name} score must be an integer 1-5, got {value!r}")
    return value
