"""`simroute eval`: the config's policy chain (rules, a mode, a trained model) decides
the stored sessions again, through the one procedure every routing report uses
(router/reports/workload.py), and is scored against their real answers.

With `sessions`, only those are decided, each from the state a router started at
its first call would have had: the prediction for a frozen router (`learned.freeze`)
serving that session, which the router then delivers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from calls import Mode
from router.config import Config
from router.engine.tool_catalog import ToolCatalog
from router.reports.learned_policy import explained_policy
from router.reports.workload import ExplainedPolicy, RecordedCall, WorkloadReport, recorded_workload, run_workload
from router.runtime.policy_chain import build_policies, learned_settings, learned_tenancy, replay_modes


def evaluate_rows(
    cfg: Config,
    rows: list[dict[str, Any]],
    *,
    catalog: ToolCatalog | None = None,
    model_path: Path | None = None,
    sessions: set[str] | None = None,
) -> WorkloadReport:
    """The report of deciding `rows`' sessions (or only `sessions`) again."""
    learned = explained_policy(cfg, model_path) if cfg.uses_learned() or model_path is not None else None
    if learned is not None and model_path is not None and not cfg.uses_learned():
        # --model with a config that does not use it: evaluate it as the mode.
        cfg = cfg.model_copy(update={"mode": Mode.LEARNED})
    calls = recorded_workload(
        rows,
        max_divergence=cfg.learned.max_divergence,
        prior_strength=cfg.learned.prior_strength,
        sessions=sessions,
        tenancy=learned_tenancy(cfg),
    )
    return decide_again(cfg, calls, learned, catalog)


def decide_again(
    cfg: Config, calls: Sequence[RecordedCall], learned: ExplainedPolicy | None, catalog: ToolCatalog | None
) -> WorkloadReport:
    """`calls` decided by the policy chain `cfg` describes, with `learned` as its learned router."""
    chain = build_policies(cfg, tools_meta=(catalog or ToolCatalog()).lookup, learned=learned)
    settings = learned_settings(cfg)
    return run_workload(
        calls,
        chain,
        learned=learned,
        modes=replay_modes(cfg),
        max_divergence=cfg.learned.max_divergence,
        real_price=settings.real_price,
        sim_price=settings.sim_price,
        latency_weight=settings.latency_weight,
    )


def render(report: WorkloadReport, *, title: str):
    """The report as a rich table, and the reasons calls stayed real."""
    from rich.console import Group
    from rich.table import Table

    table = Table(
        "calls",
        "sessions",
        "off real",
        "sim",
        "replay",
        "replay misses",
        "fidelity kept",
        "wrong",
        "unscored",
        "cost saved",
        title=title,
    )
    table.add_row(
        str(report.calls),
        str(report.sessions),
        f"{report.off_real_share:.1%}",
        str(report.served["sim"]),
        str(report.served["replay"]),
        str(report.replay_misses),
        f"{report.fidelity:.3f}",
        str(report.wrong),
        str(report.unscored),
        f"{report.cost_saved:.2f}",
    )
    why = Table("calls", "why they stayed real", title="calls served real")
    for reason, count in report.why_real.most_common(12):
        why.add_row(str(count), reason)
    return Group(table, why) if report.why_real else table
