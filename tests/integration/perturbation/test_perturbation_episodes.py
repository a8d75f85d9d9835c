"""An episode's own perturbation plan on `simroute serve`: drawn from the episode's
seed, so two episodes with one seed see the same faults at the same steps."""

from __future__ import annotations

import pytest
from kit.episodes import serving_episodes, text_of
from kit.launch import toolbox_server, write_config

pytestmark = pytest.mark.integration

PLAN = {"rules": [{"name": "flaky-echo", "kind": "error", "probability": 0.4, "match": {"tool": "echo"}}]}


def test_episodes_with_one_seed_see_the_same_faults_and_another_seed_others(tmp_path):
    config = write_config(tmp_path, mcpServers={"toolbox": toolbox_server()})
    with serving_episodes(config) as served:

        def faults(seed: int) -> list[int]:
            episode = served.open(seed=seed, options={"route": "real", "perturbation": PLAN})
            failed = []
            for step in range(20):
                answer = served.call(episode, "echo", text=f"word {step}")
                meta = answer["observation"]["result"]["_meta"]["simroute"]
                if "perturbation" in meta:
                    assert meta["perturbation"] == {
                        "kind": "error",
                        "rule": "episode:flaky-echo",
                        "seed": seed,
                        "n": step + 1,
                    }
                    assert answer["observation"]["result"]["isError"] and meta["provenance"] == "none"
                    failed.append(step)
                else:
                    assert text_of(answer) == f"word {step}"
            return failed

        first = faults(5)
        assert first == faults(5) and 2 <= len(first) <= 14
        assert faults(6) != first
        refused = served.reset(options={"perturbation": "nope"})
        assert refused.status_code == 422 and "'nope' is not one of perturbations.plans" in refused.text
