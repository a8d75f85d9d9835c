"""`simroute judge`'s report as tables: the scores of simulated and control pairs
per dimension (1–5) and overall (0–100), the judge's failures and its agreement
with the rule-based divergence, then the same per tool."""

from __future__ import annotations

from typing import Any

from records.judge.prompt import DIMENSIONS


def render(report: dict[str, Any]) -> list[Any]:
    from rich.table import Table

    judge = report["judge"]
    scores = Table(
        title=f"judge {judge['model']} ({judge['prompt_version']}) at {judge['endpoint']}", title_justify="left"
    )
    scores.add_column("pairs")
    for name in (*DIMENSIONS, "mean (1-5)", "score (0-100)", "scored", "failed", "retried"):
        scores.add_column(name, justify="right")
    for kind, label in (("simulated", "simulated vs real"), ("control", "real vs real (control)")):
        part = report[kind]
        scores.add_row(
            label,
            *(_fmt(part["dimensions"][name]) for name in DIMENSIONS),
            _fmt(part["mean"]),
            _fmt(part["score_100"], 1),
            str(part["scored"]),
            str(part["failed"]),
            str(part["retried"]),
        )
    agreement = report["agreement"]
    facts = Table(show_header=False, title="calibration", title_justify="left")
    facts.add_column("what")
    facts.add_column("value", justify="right")
    facts.add_row("failure rate", _fmt(report["failure_rate"], 3))
    facts.add_row(
        "Spearman (score vs -divergence)", _fmt(agreement["spearman"], 3) + f" over {agreement['pairs']} pairs"
    )
    facts.add_row("scores stored", str(report["stored"]))
    facts.add_row("records read", str(report["records_read"]))
    tools = Table(title="per tool (0-100)", title_justify="left")
    for name in ("channel", "server", "tool", "simulated", "control"):
        tools.add_column(name, justify="right" if name in ("simulated", "control") else "left")
    for row in report["by_tool"]:
        tools.add_row(
            row["channel"],
            row["server"],
            row["tool"],
            *(f"{_fmt(row[kind]['score_100'], 1)} ({row[kind]['scored']})" for kind in ("simulated", "control")),
        )
    return [scores, facts, tools]


def _fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"
