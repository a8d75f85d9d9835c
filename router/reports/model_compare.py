"""The table of `simroute compare-models`: per candidate world model, domain and
tool, how close its simulations of held-out calls came to the real answers. Pure:
per-call results in, rows and text out.

Beside each row, the real-vs-real floor: the divergence between two real answers
to the same call in different sessions (what "as good as the real tool" scores;
a tool whose real answers vary never scores 0)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class CallResult:
    """One held-out call simulated by one candidate."""

    candidate: str
    domain: str  # the AgentWorldBench domain (MCP, Terminal, Web)
    channel: str
    server: str
    tool: str
    session: str
    step: int
    divergence: float  # from the real answer, as the shadow compares (shadow/compare/divergence.py)
    well_formed: bool  # the channel's checker passed and the model gave an answer at all
    latency_s: float
    prompt_tokens: int
    completion_tokens: int
    floor: float | None = None  # real vs real for the same call, None when no other real answer
    problem: str | None = None  # why not well-formed
    simulated: str = ""  # the start of the simulated answer's text
    judge_score: float | None = None  # 0–100 from `--judge` (AgentWorldBench's scale); None: not judged or no verdict
    # Who answered (the answer's sub-provenance): `model`; end to end also `model+state`, `state`, `replay-aligned`.
    answered_by: str | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class ToolRow:
    candidate: str
    domain: str
    tool: str  # server.tool
    calls: int
    mean_divergence: float
    well_formed: float  # fraction
    latency_p50_s: float
    latency_p95_s: float
    prompt_tokens: float  # mean per call
    completion_tokens: float  # mean per call
    floor: float | None  # mean real-vs-real divergence of the calls that have a pair
    floor_pairs: int
    judge_score: float | None = None  # mean 0–100 of the judged calls (`--judge`)
    judged: int = 0

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile (`q` in 0..100) of non-empty `values`."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summarize(results: Iterable[CallResult]) -> list[ToolRow]:
    """One row per candidate, domain and tool, in the order they first appear; then
    per candidate and domain an `*` row over its tools, and an `all` row per candidate."""
    groups: dict[tuple[str, str, str], list[CallResult]] = {}
    for result in results:
        groups.setdefault((result.candidate, result.domain, f"{result.server}.{result.tool}"), []).append(result)
    rows = [_row(key, part) for key, part in groups.items()]
    by_domain: dict[tuple[str, str, str], list[CallResult]] = {}
    by_candidate: dict[tuple[str, str, str], list[CallResult]] = {}
    for (candidate, domain, _), part in groups.items():
        by_domain.setdefault((candidate, domain, "*"), []).extend(part)
        by_candidate.setdefault((candidate, "all", "*"), []).extend(part)
    rows += [_row(key, part) for key, part in by_domain.items()]
    rows += [_row(key, part) for key, part in by_candidate.items()]
    return rows


def _row(key: tuple[str, str, str], part: list[CallResult]) -> ToolRow:
    latencies = [r.latency_s for r in part]
    floors = [r.floor for r in part if r.floor is not None]
    scores = [r.judge_score for r in part if r.judge_score is not None]
    return ToolRow(
        candidate=key[0],
        domain=key[1],
        tool=key[2],
        calls=len(part),
        mean_divergence=statistics.fmean(r.divergence for r in part),
        well_formed=sum(r.well_formed for r in part) / len(part),
        latency_p50_s=percentile(latencies, 50),
        latency_p95_s=percentile(latencies, 95),
        prompt_tokens=statistics.fmean(r.prompt_tokens for r in part),
        completion_tokens=statistics.fmean(r.completion_tokens for r in part),
        floor=statistics.fmean(floors) if floors else None,
        floor_pairs=len(floors),
        judge_score=statistics.fmean(scores) if scores else None,
        judged=len(scores),
    )


def render(rows: Sequence[ToolRow]) -> str:
    """The table a team chooses a world model from: each tool's rows together, one
    line per candidate, so the candidates read against each other and the floor."""
    judged = any(row.judged for row in rows)
    header = (
        f"{'domain':9} {'tool':28} {'model':16} {'calls':>5} {'mean div':>8} {'floor':>11} "
        f"{'well-formed':>11} {'p50 s':>7} {'p95 s':>7} {'tokens in/out':>14}" + (f" {'judge':>11}" if judged else "")
    )
    lines = [header, "-" * len(header)]
    order: dict[tuple[str, str], list[ToolRow]] = {}
    for row in rows:
        order.setdefault((row.domain, row.tool), []).append(row)
    for (domain, tool), part in order.items():
        for row in part:
            floor = "-" if row.floor is None else f"{row.floor:.3f} ({row.floor_pairs})"
            tokens = f"{row.prompt_tokens:.0f}/{row.completion_tokens:.0f}"
            score = "-" if row.judge_score is None else f"{row.judge_score:.0f} ({row.judged})"
            lines.append(
                f"{domain:9} {tool[:28]:28} {row.candidate[:16]:16} "
                f"{row.calls:5d} {row.mean_divergence:8.3f} {floor:>11} "
                f"{row.well_formed:11.0%} {row.latency_p50_s:7.2f} {row.latency_p95_s:7.2f} {tokens:>14}"
                + (f" {score:>11}" if judged else "")
            )
    lines.append("")
    lines.append(
        "mean div: 0 = the real answer (noise masked), 1 = unrelated; floor: two real answers to the same call (pairs)"
    )
    if judged:
        lines.append(
            "judge: the judge model's 0–100 score of the simulated answer against the real one (calls with a verdict)"
        )
    return "\n".join(lines)
