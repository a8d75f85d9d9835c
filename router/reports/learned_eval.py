"""`simroute eval`: the config's policy chain (rules, a mode, a trained model) replayed
over stored records, scored with the labels those records carry.

Each record whose real answer is known is decided again, in time order, in its
own session (pins and side effects carry within a session as they would live).
What the agent would have seen: real (and shadow) answers count as faithful;
a sim or replay decision is scored with that call's sim or replay label, and a
call the candidate sends to a route it has no label for is counted as
unscored. The learned router sees the statistics as they were before each call.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies.base import decide
from policies.learned import StateBuilder, after_call
from router.config import Config
from router.engine.tool_catalog import ToolCatalog
from router.reports.learned_policy import loaded_policy
from router.runtime.policy_chain import build_policies, learned_settings
from router.types import Call, Decision, Mode, Route, Session

_FALLBACK = Decision(Route.REAL, "default", "no policy answered")
_SNAPSHOT_EVERY = 50  # records between refreshes of the learned router's statistics (as live)


@dataclass(slots=True)
class EvalReport:
    calls: int = 0
    routes: Counter = field(default_factory=Counter)
    divergence: float = 0.0  # sum over scored calls
    scored: int = 0
    unscored: int = 0
    cost_saved: float = 0.0
    model: str | None = None

    @property
    def fidelity(self) -> float:
        return 1.0 - self.divergence / self.scored if self.scored else 1.0

    @property
    def real_calls_saved(self) -> int:
        return self.routes[Route.SIM] + self.routes[Route.REPLAY] + self.routes[Route.DENY]

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "routes": {str(k): v for k, v in self.routes.items()},
            "fidelity": round(self.fidelity, 4),
            "scored": self.scored,
            "unscored": self.unscored,
            "real_calls_saved": self.real_calls_saved,
            "cost_saved": round(self.cost_saved, 4),
            "model": self.model,
        }

    def render(self):
        from rich.table import Table

        table = Table(
            "calls",
            "real",
            "shadow",
            "sim",
            "replay",
            "deny",
            "fidelity kept",
            "real calls saved",
            "cost saved",
            "unscored",
            title=f"policy replayed over stored records{f' (model {self.model})' if self.model else ''}",
        )
        share = lambda route: f"{self.routes[route] / self.calls:.1%}" if self.calls else "-"  # noqa: E731
        table.add_row(
            str(self.calls),
            *(share(r) for r in (Route.REAL, Route.SHADOW, Route.SIM, Route.REPLAY, Route.DENY)),
            f"{self.fidelity:.3f}",
            str(self.real_calls_saved),
            f"{self.cost_saved:.2f}",
            str(self.unscored),
        )
        return table


def evaluate_rows(cfg: Config, rows: list[dict[str, Any]], *, model_path: Path | None = None) -> EvalReport:
    catalog = ToolCatalog()
    if cfg.store.redis_url is None and cfg.store_path.exists():
        catalog.load_store(cfg.store_path)
    learned = loaded_policy(cfg, model_path, rows=[]) if cfg.uses_learned() or model_path is not None else None
    if learned is not None and model_path is not None and not cfg.uses_learned():
        cfg = cfg.model_copy(update={"mode": Mode.LEARNED})  # --model with a config that does not use it: evaluate it as the mode
    chain = build_policies(cfg, tools_meta=catalog.lookup, learned=learned)
    settings = learned_settings(cfg)
    builder = StateBuilder(max_divergence=cfg.learned.max_divergence, confidence=cfg.learned.prior_confidence)
    report = EvalReport(model=learned.model.digest if learned is not None and learned.model is not None else None)
    sessions: dict[str, Session] = {}
    for n, row in enumerate(sorted(rows, key=lambda r: (r["ts"], r["id"]))):
        if learned is not None and n % _SNAPSHOT_EVERY == 0:
            learned.state = builder.snapshot()
        labels = {label.route: label for label in builder.labels.add(row)}
        builder.count += len(labels)
        if row.get("status") != "complete" or row.get("provenance") != "real":
            continue  # the truth is known for calls that got a real answer
        call = Call(row["channel"], row["server"], row["tool"], row.get("arguments") or {}, row["session"])
        session = sessions.setdefault(call.session_id, Session(call.session_id))
        session.steps = int(row.get("step") or session.steps + 1)
        decision = decide(chain, call, session, fallback=_FALLBACK)
        after_call(session, call, decision)
        report.calls += 1
        report.routes[decision.route] += 1
        stats = builder.labels.stats.get(f"{call.channel}\x1f{call.server}\x1f{call.tool}")
        real_cost = settings.real_price(call.server, call.tool) + settings.latency_weight * float(row.get("latency_ms") or 0) / 1000
        if decision.route in (Route.REAL, Route.SHADOW):
            report.scored += 1
        elif decision.route in (Route.SIM, Route.REPLAY):
            label = labels.get(str(decision.route))
            if label is None:
                report.unscored += 1
                continue
            report.scored += 1
            report.divergence += label.divergence
            latency = (stats.mean_latency("sim") or 1.0) if decision.route is Route.SIM and stats else 0.0
            price = settings.sim_price if decision.route is Route.SIM else 0.0
            report.cost_saved += real_cost - (price + settings.latency_weight * latency)
        else:  # deny: nothing seen, nothing spent
            report.cost_saved += real_cost
    return report
