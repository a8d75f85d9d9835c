"""An episode's perturbation plan: named from the config, or given whole."""

import json

import pytest

from router.config import parse_config
from router.episodes.options import EpisodeOptions, EpisodeOptionsError

CONFIG = parse_config(
    json.dumps({"perturbations": {"plans": {"flaky": {"seed": 5, "rules": [{"kind": "error", "probability": 0.3}]}}}})
)


def test_an_episode_names_a_configured_plan_or_gives_its_own():
    named = EpisodeOptions.parse({"perturbation": "flaky"}, CONFIG).perturbation_plan(CONFIG)
    assert named is not None and named.name == "flaky" and [rule.name for rule in named.rules] == ["error[0]"]
    own = EpisodeOptions.parse(
        {"perturbation": {"rules": [{"kind": "rate_limit", "limit": 2}]}}, CONFIG
    ).perturbation_plan(CONFIG)
    assert own is not None and own.name == "episode" and own.rules[0].config.limit == 2
    assert EpisodeOptions.parse({}, CONFIG).perturbation_plan(CONFIG) is None


@pytest.mark.parametrize(
    ("perturbation", "says"),
    [("nope", "'nope' is not one of perturbations.plans"), ({"rules": [{"kind": "latency"}]}, "needs delay_s")],
)
def test_a_bad_episode_plan_is_refused(perturbation, says):
    with pytest.raises(EpisodeOptionsError, match=says):
        EpisodeOptions.parse({"perturbation": perturbation}, CONFIG)
