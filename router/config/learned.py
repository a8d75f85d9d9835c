"""The config's `learned` section: the learned router's classifier, its training and
the published model (policies/learned/). A strict pydantic model; each field's
description is the configuration reference's text."""

from __future__ import annotations

from pydantic import Field, PositiveFloat, PositiveInt

from backends.options import Strict


class LearnedConfig(Strict):
    """The learned router (`mode: learned`, a rule's `route: learned`)."""

    model: str = Field(
        default=".simroute/router.skops", description="The learned router's model (relative to the config folder)."
    )
    max_divergence: float = Field(
        default=0.2, ge=0.0, le=1.0, description="An answer is acceptable at or below this divergence."
    )
    target_fidelity: float = Field(
        default=0.9, gt=0.0, le=1.0, description="`simroute train` picks thresholds to keep this fidelity."
    )
    min_labels: PositiveInt = Field(default=20, description="Labels per tool and route before the classifier decides.")
    prior_strength: float = Field(
        default=4.0,
        ge=0.0,
        description="Most pseudo-labels the prior fitted across tools of a kind may lend a tool with few labels.",
    )
    prior_confidence: float | None = Field(
        default=None,
        gt=0.0,
        lt=1.0,
        description="Not used any more (the few-label estimate is a posterior mean); accepted so older configs load.",
    )
    replay_min_sessions: int = Field(
        default=2,
        ge=0,
        description=(
            "A tool whose real answers agreed with what replay serves in this many distinct sessions, and never "
            "differed, replays (0: off)."
        ),
    )
    freeze: bool = Field(
        default=False, description="Load the model and statistics once at start; never refresh or reload them."
    )
    explore_rate: float = Field(
        default=0.05, ge=0.0, le=1.0, description="Share of decided calls sent the other way with shadow."
    )
    latency_weight: float = Field(
        default=0.1, ge=0.0, description="Cost per second of expected latency (cost = price + weight × latency)."
    )
    sim_price: float = Field(default=0.1, ge=0.0, description="The price of a simulated call (replay's is 0).")
    simulate_side_effects: bool = Field(default=False, description="Let calls not classed `safe` leave the real side.")
    refresh_s: PositiveFloat = Field(
        default=30.0, description="Per-tool statistics and replay keys refreshed this often."
    )
    watch_s: PositiveFloat = Field(default=1.0, description="The model file is checked for a new model this often.")
    max_records: PositiveInt = Field(default=50_000, description="Newest records read for training and statistics.")
