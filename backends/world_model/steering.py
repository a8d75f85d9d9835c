"""The `mislead` perturbation's hold on the world model: plausible, well-formed,
wrong data. The route's own answer (real, recorded or simulated) is the ground
truth the model is shown and told not to give; the answer is held to the tool's
shape by the domain as any simulated answer is (its grammar, its checker, the
tool's output schema), and to the kind by `differs`: a success, not the truth.

Also the steer of the one retry after a refused answer (`restated`): the problem
stated, so the model is told what was wrong instead of only sampled again."""

from __future__ import annotations

import json
from typing import Any

from calls import Observation, Steer

# The truth is shown up to this many characters: the prompt keeps room for the history.
TRUTH_CHARS = 2000

MISLEAD = (
    "## Perturbation for this action: mislead\n"
    "Answer with plausible, well-formed but WRONG data: the same format, fields and style as the real "
    "answer, with its facts changed (names, numbers, dates, identifiers, counts, statuses), so that an "
    "agent relying on it is misled. Do not answer with an error. The real answer, which you must NOT "
    "give, is:\n```\n{truth}\n```"
)


def mislead(truth: Observation) -> Steer:
    """The steer of a misleading answer to a call whose true answer is `truth`."""
    text = truth.text
    if len(text) > TRUTH_CHARS:
        text = text[:TRUTH_CHARS] + "\n[…]"
    return Steer("mislead", MISLEAD.format(truth=text), check=lambda observation: differs(observation, truth))


def differs(observation: Observation, truth: Observation) -> str | None:
    """None when `observation` is a success whose content is not the truth's."""
    if observation.is_error:
        return "an error instead of misleading data"
    if _canonical(observation) == _canonical(truth):
        return "the same as the real answer (mislead asks for wrong data)"
    return None


def _canonical(observation: Observation) -> Any:
    """What is compared: an HTTP answer's body (its headers, a Date, differ anyway),
    a structured result, else the text (JSON read as values, whitespace ignored)."""
    structured = observation.structured
    if isinstance(structured, dict) and "status" in structured and "body" in structured:
        text = str(structured.get("body") or "").strip()
    elif structured is not None:
        return json.dumps(structured, sort_keys=True, ensure_ascii=False)
    else:
        text = observation.text.strip()
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return " ".join(text.split())


# The refused answer's problem, stated for the one retry (cut: it may quote the answer).
PROBLEM_CHARS = 300
REFUSED = (
    "## Your previous answer was refused\n"
    "It was refused because of this problem: {problem}\n"
    "Answer again with only what the real environment returns for this action, in its own format."
)


def restated(problem: str, steer: Steer | None = None) -> Steer:
    """The steer of the one retry after a refused answer: the problem stated, before
    the call's own steer (a perturbation's instruction and check, which still hold)."""
    if len(problem) > PROBLEM_CHARS:
        problem = problem[:PROBLEM_CHARS] + "…"
    instruction = REFUSED.format(problem=problem)
    if steer is None:
        return Steer("refused", instruction)
    return Steer(steer.kind, instruction + "\n\n" + steer.instruction, check=steer.check)
