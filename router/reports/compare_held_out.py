"""Candidate world models measured on the held-out sessions of a store, one after the
other on the same calls (router/reports/compare_run.py): the document `simroute
compare-models --json` prints and `simroute tune` reads its card's figures from."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from records.judge.run import JudgeModel
from records.record import Record
from router.config import Config
from router.reports.compare_run import (
    Candidate,
    add_floors,
    held_out_sessions,
    run_candidate,
    targets,
)
from router.reports.held_out import HeldOut
from router.reports.model_compare import summarize
from router.runtime.example_lookup import replay_keys


class NoHeldOutCalls(ValueError):
    """The held-out sessions hold no call with a real answer."""


async def compare_on_held_out(
    cfg: Config,
    candidates: Sequence[Candidate],
    held_out: HeldOut,
    *,
    max_sessions: int | None = None,
    max_calls: int | None = None,
    temperature: float | None = None,
    on_prompt: Callable[[Candidate, Record, list[dict[str, Any]]], None] = lambda candidate, record, messages: None,
    judge: JudgeModel | None = None,
    end_to_end: bool = False,
) -> dict[str, Any]:
    """Each candidate on the held-out calls of `cfg`'s store: the candidates, what was held
    out, the rows per candidate, domain and tool, and every call. `end_to_end`: each call
    answered as the sim route answers with `cfg`'s world-state layer (the session's state,
    aligned training sessions, then the model); else by the model alone. Raises
    NoHeldOutCalls, and the store's and the judge's errors as they come."""
    store = await cfg.open_store(read_only=True).open()
    try:
        keys = replay_keys(cfg, store, withheld=held_out.withheld)  # the training side's recordings only
        sessions = await held_out_sessions(store, held_out, max_sessions=max_sessions)
        found = await targets(store, sessions, max_calls=max_calls)
        if not found:
            raise NoHeldOutCalls(f"the held-out sessions ({len(sessions)}) hold no call with a real answer")
        await add_floors(store, found, keys)
        calls = []
        for candidate in candidates:
            calls += await run_candidate(
                cfg,
                store,
                candidate,
                found,
                keys,
                temperature=temperature,
                on_prompt=on_prompt,
                judge=judge,
                world_state=end_to_end,
            )
    finally:
        await store.aclose()
    return {
        "candidates": [candidate.describe() for candidate in candidates],
        "held_out": {**held_out.describe(), "sessions": len(sessions), "calls": len(found)},
        "end_to_end": end_to_end,
        "rows": [row.as_json() for row in summarize(calls)],
        "calls": [call.as_json() for call in calls],
    }
