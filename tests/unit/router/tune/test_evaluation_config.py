"""The evaluation's model settings: every core unless the config names the threads, the
world-state layer off for the setting the training target applies to."""

from __future__ import annotations

import os

from router.config import Config
from router.tune.evaluate import on_every_core, state_layer_off


def test_the_evaluation_runs_the_model_on_every_core_when_the_config_leaves_it_unset() -> None:
    assert Config().world_model.threads is None
    assert on_every_core(Config()).world_model.threads == os.cpu_count()


def test_threads_the_config_names_are_kept() -> None:
    cfg = Config.model_validate({"world_model": {"threads": 1}})
    assert on_every_core(cfg).world_model.threads == 1


def test_the_state_layer_off_setting_changes_nothing_else() -> None:
    cfg = Config()
    off = state_layer_off(cfg)
    assert cfg.world_state.enabled and not off.world_state.enabled
    assert off.world_model == cfg.world_model
