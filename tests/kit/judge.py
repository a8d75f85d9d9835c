"""A judge for tests, behind the OpenAI-compatible stub (kit/model_stub.py): it reads
the pair from the judging prompt and scores the candidate by how many of its words
the reference lacks (none: 5 on every dimension; each one costs a point, down to 1).
A reference naming MALFORMED_ONCE gets an unreadable first verdict and a good one on
the retry; MALFORMED_ALWAYS, an unreadable verdict every time. And a store of shadow
pairs and real-vs-real pairs to judge; and llama-cpp-python's server to judge with."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from calls import Call, Decision, Observation, Provenance, Route, call_key
from kit.llama_server import llama_cpp_server  # noqa: F401  (the judge's tests use it from here)
from kit.model_stub import ModelStub
from records.record import Record

_PAIR = re.compile(
    r"## Reference observation \(real\)\n(.*)\n\n## Candidate observation\n(.*)\n\nScore the candidate", re.DOTALL
)


def judge_reply(body: dict) -> str:
    chat = body["messages"]
    reference, candidate = _PAIR.search(chat[1]["content"]).groups()
    retry = len(chat) > 2
    if "MALFORMED_ALWAYS" in reference or ("MALFORMED_ONCE" in reference and not retry):
        return "The candidate looks fine to me, maybe a four?"
    extra = set(candidate.split()) - set(reference.split())
    score = max(1, 5 - len(extra))
    verdict = {name: score for name in ("format", "factuality", "consistency", "realism", "quality")}
    return (
        "<think>comparing</think>```json\n" + json.dumps({**verdict, "reason": f"{len(extra)} words differ"}) + "\n```"
    )


def judge_stub() -> ModelStub:
    return ModelStub(reply=judge_reply)


def _observation(text: str, provenance: Provenance) -> Observation:
    return Observation(content=[{"type": "text", "text": text}], provenance=provenance)


def _record(
    session: str, step: int, city: str, real: str, sim: str | None, divergence: float | None, ts: float
) -> Record:
    arguments = {"city": city}
    record = Record(
        call=Call("mcp", "weather", "forecast", arguments, session),
        decision=Decision(Route.SHADOW if sim is not None else Route.REAL, "mode", "test"),
        served=_observation(real, Provenance.REAL),
        step=step,
        call_key=call_key("mcp", "weather", "forecast", arguments),
        ts=ts,
        shadow=_observation(sim, Provenance.SIM) if sim is not None else None,
        divergence=divergence,
        divergence_kind=None if divergence is None else ("content" if divergence else "none"),
        divergence_evidence=None if divergence is None else {"divergent": [], "masked": [], "note": ""},
    )
    return record


# (city, real, simulated, divergence): the simulated side differs more as the divergence grows.
SHADOW_PAIRS = [
    ("Oslo", "Oslo: 3 C, cloudy", "Oslo: 3 C, cloudy", 0.0),
    ("Lima", "Lima: 19 C, sunny", "Lima: 21 C, sunny", 0.2),
    ("Pune", "Pune: 30 C, humid", "Pune: 12 C, rainy", 0.5),
    ("Rome", "Rome: 15 C, clear", "Berlin: -4 C, snow storm", 0.9),
    ("Bern", "Bern: 5 C MALFORMED_ONCE", "Bern: 5 C MALFORMED_ONCE", 0.0),
    ("Kyiv", "Kyiv: 1 C MALFORMED_ALWAYS", "Kyiv: 8 C MALFORMED_ALWAYS", 0.4),
]
# Real answers to the same calls in other sessions: the control pairs.
CONTROL_ANSWERS = [("Oslo", "Oslo: 3 C, cloudy"), ("Lima", "Lima: 19 C, sunny"), ("Pune", "Pune: 30 C, humid")]


def judged_rows(now: float | None = None) -> list[dict[str, Any]]:
    """Records to judge: six shadow pairs in session `a` (two of them with malformed
    verdicts), three real answers to the same calls in session `b` (three control pairs)."""
    now = time.time() if now is None else now
    rows = [
        _record("a", step, city, real, sim, divergence, now - 100 + step).to_json()
        for step, (city, real, sim, divergence) in enumerate(SHADOW_PAIRS, start=1)
    ]
    rows += [
        _record("b", step, city, real, None, None, now - 50 + step).to_json()
        for step, (city, real) in enumerate(CONTROL_ANSWERS, start=1)
    ]
    return rows
