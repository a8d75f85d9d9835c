"""The judge's driver on one pair (a fake of the judge model: the logic of retries
and failures): an unreadable verdict is asked once more, then counted; a call that
fails is counted without a retry; an unreachable judge stops the run."""

from __future__ import annotations

import pytest

from calls import Call, Decision, Observation, Provenance, Route
from records.judge.pairs import SIMULATED, Pair
from records.judge.report import agreement, summary
from records.judge.run import Judged, JudgeError, JudgeUnavailable, judge_pair
from records.record import Record

GOOD = '{"format": 5, "factuality": 4, "consistency": 5, "realism": 4, "quality": 5}'


class ScriptedJudge:
    name = "scripted"

    def __init__(self, *answers: str | Exception) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[int, float]] = []

    async def answer(self, chat, *, deadline_s: float, attempt: int) -> str:
        self.asked.append((attempt, deadline_s))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def pair(divergence: float | None = 0.3) -> Pair:
    observation = Observation(content=[{"type": "text", "text": "x"}], provenance=Provenance.REAL)
    record = Record(
        Call("mcp", "s", "t", {}, "a"), Decision(Route.SHADOW, "mode", ""), observation, 1, "k", divergence=divergence
    )
    return Pair(SIMULATED, record, observation, observation)


async def test_a_readable_verdict_is_taken_at_once():
    model = ScriptedJudge(GOOD)
    done = await judge_pair(model, pair(), deadline_s=7.0)
    assert done.verdict is not None and done.verdict.mean == 4.6 and done.attempts == 1 and model.asked == [(0, 7.0)]


async def test_an_unreadable_verdict_is_asked_once_more_then_counted():
    retried = await judge_pair(ScriptedJudge("hmm", GOOD), pair(), deadline_s=7.0)
    assert retried.verdict is not None and retried.attempts == 2
    model = ScriptedJudge("hmm", "still hmm", GOOD)
    failed = await judge_pair(model, pair(), deadline_s=7.0)
    assert failed.verdict is None and failed.failure.startswith("unreadable verdict twice: no JSON object")
    assert model.asked == [(0, 7.0), (1, 7.0)] and model.answers == [GOOD]  # never a third call


async def test_a_failed_call_is_counted_and_an_unreachable_judge_stops_the_run():
    timed_out = await judge_pair(
        ScriptedJudge(JudgeError("did not answer within its 7s deadline")), pair(), deadline_s=7.0
    )
    assert timed_out.verdict is None and "deadline" in timed_out.failure and timed_out.attempts == 1
    with pytest.raises(JudgeUnavailable):
        await judge_pair(ScriptedJudge(JudgeUnavailable("down")), pair(), deadline_s=7.0)


async def test_summary_and_agreement():
    from records.judge.prompt import Verdict

    def judged(score: int, divergence: float | None) -> Judged:
        return Judged(
            pair(divergence),
            Verdict(dict.fromkeys(("format", "factuality", "consistency", "realism", "quality"), score)),
            1,
        )

    outcomes = [judged(5, 0.0), judged(3, 0.5), judged(1, 0.9), Judged(pair(), None, 2, "unreadable"), judged(4, None)]
    part = summary(outcomes)
    assert (part["pairs"], part["scored"], part["failed"], part["retried"]) == (5, 4, 1, 1)
    assert part["mean"] == 3.25 and part["score_100"] == 56.25
    assert agreement(outcomes) == {"spearman": 1.0, "p_value": 0.0, "pairs": 3}
    assert agreement(outcomes[:2])["spearman"] is None  # too few pairs to rank
