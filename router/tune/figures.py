"""The model card's evaluation figures from `compare-models`' per-call results
(router/reports/compare_held_out.py), base and candidate on the same held-out calls.
Pure: the calls as JSON in, the figures out.

Fidelity is 1 − the mean divergence from the real answer. A call the base model got
wrong is one whose base answer diverged by more than `WRONG_ABOVE` (more unlike the
real answer than like it); fidelity on those calls and on the others shows whether a
candidate learned the hard calls or only the easy ones."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from router.reports.model_compare import percentile

WRONG_ABOVE = 0.5
# The sub-provenances of an answer no model wrote (end to end, router/reports/compare_state.py).
WITHOUT_MODEL = frozenset({"state", "replay-aligned"})
BASE, CANDIDATE = "base", "candidate"


def figures(calls: Sequence[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Each card figure (router/tune/card.py FIGURES) for the base and the candidate."""
    by: dict[str, dict[tuple[str, int], dict[str, Any]]] = {BASE: {}, CANDIDATE: {}}
    for call in calls:
        if call["candidate"] in by:
            by[call["candidate"]][(call["session"], call["step"])] = call
    wrong = {key for key, call in by[BASE].items() if call["divergence"] > WRONG_ABOVE}
    out: dict[str, dict[str, float | None]] = {}
    for who, results in by.items():
        every = list(results.values())
        floors = [call["floor"] for call in every if call.get("floor") is not None]
        judged = [call["judge_score"] for call in every if call.get("judge_score") is not None]
        values = {
            "fidelity": _fidelity(every),
            "fidelity_where_base_wrong": _fidelity([c for k, c in results.items() if k in wrong]),
            "fidelity_where_base_right": _fidelity([c for k, c in results.items() if k not in wrong]),
            "real_vs_real_floor": 1.0 - statistics.fmean(floors) if floors else None,
            "judge_score": statistics.fmean(judged) if judged else None,
            "well_formed_rate": statistics.fmean(c["well_formed"] for c in every) if every else None,
            "latency_p50_s": percentile([c["latency_s"] for c in every], 50) if every else None,
            "answered_without_model": _without_model(every),
        }
        for figure, value in values.items():
            out.setdefault(figure, {})[who] = None if value is None else round(value, 4)
    return out


def _fidelity(calls: Sequence[dict[str, Any]]) -> float | None:
    return 1.0 - statistics.fmean(call["divergence"] for call in calls) if calls else None


def _without_model(calls: Sequence[dict[str, Any]]) -> float | None:
    return statistics.fmean(call.get("answered_by") in WITHOUT_MODEL for call in calls) if calls else None
