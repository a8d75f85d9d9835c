"""The judge's driver: the store read session by session (as the export reads it),
each pair put to the judge model, a malformed verdict asked once more and then
counted as failed, the scores stored beside the records (a table keyed by record
id, judge model and pair kind: records/store/*/judge_scores.py).

The judge model is a `JudgeModel`: router/ makes one of the model runners
(backends/world_model/openai_runner.py); every call has a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from records.errors import RecordsError
from records.export.options import ExportFilter
from records.export.run import sessions
from records.judge.pairs import Pair, PairFinder
from records.judge.prompt import PROMPT_VERSION, Verdict, messages, parse_verdict, retry_messages
from records.record import Record
from records.store.protocol import RecordStore

STORE_BATCH = 50  # scores written together (a crash loses at most this many)


class JudgeError(RecordsError):
    """The judge model gave no answer for a pair (a timeout, an error of its server):
    that pair is counted as failed, the run goes on."""


class JudgeUnavailable(JudgeError):
    """The judge model cannot be reached at all: the run stops, saying where it looked."""


class JudgeModel(Protocol):
    name: str  # the judge's model, as scores are stored under it

    async def answer(self, chat: list[dict[str, str]], *, deadline_s: float, attempt: int) -> str:
        """The judge's raw answer to `chat` within `deadline_s` (attempt 0, then 1 on a
        retry: another seed). Raises JudgeError, or JudgeUnavailable."""


class ScoreStore(Protocol):
    async def save_judge_scores(self, rows: list[dict[str, Any]]) -> None: ...


@dataclass(frozen=True, slots=True)
class JudgePlan:
    where: ExportFilter = field(default_factory=ExportFilter)  # which records are read (the export's filters)
    simulated: int = 200  # simulated pairs to judge, at most
    controls: int = 50  # control pairs to judge, at most
    deadline_s: float = 120.0  # per model call

    def __post_init__(self) -> None:
        if self.simulated < 0 or self.controls < 0:
            raise ValueError("the numbers of pairs to judge cannot be negative")
        if self.simulated == 0 and self.controls == 0:
            raise ValueError("nothing to judge: both --limit and --controls are 0")
        if not self.deadline_s > 0:
            raise ValueError(f"the deadline must be positive, got {self.deadline_s}")


@dataclass(slots=True)
class Judged:
    """One pair's outcome: its verdict, or why it has none."""

    pair: Pair
    verdict: Verdict | None
    attempts: int
    failure: str | None = None


@dataclass(slots=True)
class JudgeRun:
    judged: list[Judged] = field(default_factory=list)
    records: int = 0
    stored: int = 0


async def judge_pair(model: JudgeModel, pair: Pair, *, deadline_s: float) -> Judged:
    """A verdict for `pair`: asked once, asked once more if unreadable, then failed."""
    chat = messages(pair.call, pair.reference, pair.candidate)
    try:
        first = await model.answer(chat, deadline_s=deadline_s, attempt=0)
    except JudgeUnavailable:
        raise
    except JudgeError as exc:
        return Judged(pair, None, 1, f"judge call failed: {exc}")
    try:
        return Judged(pair, parse_verdict(first), 1)
    except ValueError as exc:
        problem = str(exc)
    try:
        second = await model.answer(retry_messages(chat, first, problem), deadline_s=deadline_s, attempt=1)
    except JudgeUnavailable:
        raise
    except JudgeError as exc:
        return Judged(pair, None, 2, f"judge call failed on the retry: {exc}")
    try:
        return Judged(pair, parse_verdict(second), 2)
    except ValueError as exc:
        return Judged(pair, None, 2, f"unreadable verdict twice: {exc}")


async def judge(
    store: RecordStore,
    model: JudgeModel,
    plan: JudgePlan,
    *,
    scores: ScoreStore | None = None,
    progress: Callable[[int], None] = lambda n: None,
) -> JudgeRun:
    """Judges the plan's pairs found in `store`; stores each verdict in `scores` when given."""
    run = JudgeRun()
    finder = PairFinder(plan.where, simulated=plan.simulated, controls=plan.controls)
    pending: list[dict[str, Any]] = []
    named: set[str] = set()  # a Redis SCAN may name a session twice: judge it once
    async for session in sessions(store, plan.where):
        if session in named:
            continue
        named.add(session)
        async for row in store.session_rows(session):
            run.records += 1
            try:
                record = Record.from_json(row)
            except (AttributeError, KeyError, TypeError, ValueError):
                continue
            for pair in finder.feed(record):
                done = await judge_pair(model, pair, deadline_s=plan.deadline_s)
                run.judged.append(done)
                progress(1)
                if done.verdict is not None and scores is not None:
                    pending.append(score_row(done, judge=model.name))
                    if len(pending) >= STORE_BATCH:
                        await scores.save_judge_scores(pending)
                        run.stored += len(pending)
                        pending = []
            if finder.done:
                break
        if finder.done:
            break
    if pending and scores is not None:
        await scores.save_judge_scores(pending)
        run.stored += len(pending)
    return run


def score_row(done: Judged, *, judge: str) -> dict[str, Any]:
    """A stored score: keyed by record id, judge model and kind, with what the
    dashboard filters on (the record's time, session, channel, server, tool, route)."""
    assert done.verdict is not None
    record = done.pair.record
    return {
        "record_id": record.id,
        "judge": judge,
        "kind": done.pair.kind,
        "prompt_version": PROMPT_VERSION,
        "ts": record.ts,
        "session": record.call.session_id,
        "channel": record.call.channel,
        "server": record.call.server,
        "tool": record.call.tool,
        "route": str(record.decision.route),
        "divergence": record.divergence if done.pair.kind == "simulated" else None,
        "score": round(done.verdict.score_100, 3),
        "scores": dict(done.verdict.scores),
        "reason": done.verdict.reason[:500],
        "other": done.pair.other,
        "judged": time.time(),
    }
