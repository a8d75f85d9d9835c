"""The judging prompt and the verdict parser (pure)."""

from __future__ import annotations

import pytest

from calls import Call, Observation, Provenance
from records.judge.prompt import (
    DIMENSIONS,
    PROMPT_VERSION,
    VERDICT_SCHEMA,
    messages,
    parse_verdict,
    retry_messages,
    to_100,
)

ALL_FOURS = '{"format": 4, "factuality": 4, "consistency": 4, "realism": 4, "quality": 4, "reason": "close"}'


def test_the_prompt_names_every_dimension_and_shows_both_sides():
    call = Call("mcp", "weather", "forecast", {"city": "Oslo"}, "s")
    real = Observation(content=[{"type": "text", "text": "3 C"}], provenance=Provenance.REAL)
    sim = Observation(
        content=[{"type": "text", "text": "25 C"}], structured={"t": 25}, provenance=Provenance.SIM, is_error=True
    )
    system, user = messages(call, real, sim)
    assert system["role"] == "system" and all(f"- {name}:" in system["content"] for name in DIMENSIONS)
    assert user["content"].index("3 C") < user["content"].index("25 C") < user["content"].index("Score the candidate")
    assert '"city": "Oslo"' in user["content"] and "status: error" in user["content"] and '{"t": 25}' in user["content"]
    assert PROMPT_VERSION and set(VERDICT_SCHEMA["required"]) == {*DIMENSIONS, "reason"}


def test_a_long_observation_is_cut_in_the_middle():
    long = Observation(content=[{"type": "text", "text": "head " + "x" * 20_000 + " tail"}], provenance=Provenance.REAL)
    content = messages(Call("mcp", "s", "t", {}, "s"), long, long)[1]["content"]
    assert "head" in content and "tail" in content and "characters left out" in content and len(content) < 15_000


@pytest.mark.parametrize(
    "answer",
    [
        ALL_FOURS,
        f"<think>the numbers {{differ}}</think>\n```json\n{ALL_FOURS}\n```",
        f"Here is my verdict: {ALL_FOURS} Done.",
        '{"Format": "4", "Factuality": 4.0, "consistency": 4, "realism": 4, "quality": 4}',
        f'{{"format": 1}} then corrected: {ALL_FOURS}',  # the last object with the scores wins
    ],
)
def test_verdicts_are_read_from_what_judges_write(answer):
    verdict = parse_verdict(answer)
    assert verdict.scores == dict.fromkeys(DIMENSIONS, 4) and verdict.mean == 4 and verdict.score_100 == 75.0


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("four out of five", "no JSON object"),
        ('{"format": 4, "factuality": 4, "consistency": 4, "realism": 4}', "no quality score"),
        (
            '{"format": 6, "factuality": 4, "consistency": 4, "realism": 4, "quality": 4}',
            "format score must be an integer 1-5",
        ),
        (
            '{"format": 3.5, "factuality": 4, "consistency": 4, "realism": 4, "quality": 4}',
            "format score must be an integer 1-5",
        ),
        ('{"format": true, "factuality": 4, "consistency": 4, "realism": 4, "quality": 4}', "not a number"),
    ],
)
def test_an_unreadable_verdict_says_why(answer, problem):
    with pytest.raises(ValueError, match=problem):
        parse_verdict(answer)


def test_the_retry_shows_the_unreadable_answer_and_why():
    first = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    chat = retry_messages(first, "four", "no JSON object with the scores")
    assert chat[:2] == first and chat[2] == {"role": "assistant", "content": "four"}
    assert "no JSON object with the scores" in chat[3]["content"]


def test_the_0_to_100_scale():
    assert (to_100(1), to_100(3), to_100(5)) == (0.0, 50.0, 100.0)
