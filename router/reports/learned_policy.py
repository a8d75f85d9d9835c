"""The learned router as `simroute explain`, `simroute eval` and `simroute train` load
and show it.

`loaded_policy` builds a `LearnedPolicy` from the model file (when it exists) and
statistics from the records given; `explained_policy` the same for reports (it
keeps its last assessment); `replay_key_function` makes replay keys as the router
does; `learned_json` is what `explain` prints of the learned router for a call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backends.replay import ReplayBackend
from policies.learned import LearnedPolicy, StateBuilder
from policies.learned.persistence import load_model
from router.auth import configured_tokens
from router.config import Config
from router.reports.workload import ExplainedPolicy
from router.runtime.expected_sub import expected_sub
from router.runtime.policy_chain import learned_settings, learned_tenancy


def replay_key_function(cfg: Config):
    """Replay keys as the router makes them (secrets are not redacted here: a call
    carrying one gets another key than the router's, so it shows no recording)."""
    replay = ReplayBackend(
        None,  # type: ignore[arg-type]
        ignore_arguments=cfg.replay.ignore_arguments,
        canonical={"http": cfg.http_canonical()},
        scheme_inputs=cfg.replay_key_scheme(),
        namespaced=configured_tokens(cfg.service.tokens).enabled,
    )
    return lambda call: replay.keys(call).replay


def loaded_policy(cfg: Config, model_path: Path | None = None, *, rows: list[dict[str, Any]]) -> LearnedPolicy:
    """A LearnedPolicy with the model (if its file exists) and statistics from `rows`."""
    path = model_path or cfg.learned_model_path
    model = load_model(path) if path.exists() else None
    builder = StateBuilder(
        max_divergence=cfg.learned.max_divergence,
        prior_strength=cfg.learned.prior_strength,
        tenancy=learned_tenancy(cfg),
    )
    builder.add(sorted(rows, key=lambda r: (r["ts"], r["id"])))
    return LearnedPolicy(
        learned_settings(cfg),
        replay_key_of=replay_key_function(cfg),
        model=model,
        state=builder.snapshot(),
        expected_sub=expected_sub(cfg.world_state.on_for),
    )


def explained_policy(cfg: Config, model_path: Path | None = None) -> ExplainedPolicy:
    """The learned router of `cfg` for a workload report (its state is set per session
    by the report), with the model file's model if it exists."""
    path = model_path or cfg.learned_model_path
    model = load_model(path) if path.exists() else None
    return ExplainedPolicy(
        learned_settings(cfg),
        replay_key_of=replay_key_function(cfg),
        model=model,
        expected_sub=expected_sub(cfg.world_state.on_for),
    )


def learned_json(policy, call, session, verdict) -> dict[str, Any]:
    """What `simroute explain` shows of the learned router for a call."""
    assessment = policy.assess(call, session, verdict)
    model = policy.model
    return {
        "route": str(assessment.route),
        "candidates": [c.to_json() for c in assessment.candidates],
        "real_cost": round(assessment.real_cost, 4),
        "model": model.digest if model is not None else None,
        "thresholds": {route: m.threshold for route, m in model.routes.items()} if model is not None else {},
        "labels": policy.state.labels,
    }
