"""The adoption rule on model cards: a candidate is adopted on --adopt, or when its
held-out fidelity (world-state layer off) beats the base's by the margin and its
well-formed rate does not drop; a refusal names the figures it was decided on. A
revert marks the reverted run's card."""

from __future__ import annotations

import pytest
from kit.tune_run import evaluated_card, evaluated_run

from router.tune.adoption import decide, mark_reverted
from router.tune.run import read_card


@pytest.mark.parametrize(
    "figures, margin, adopted, says",
    [
        ({"base": 0.40, "candidate": 0.50}, 0.05, True, "gained +0.100"),
        ({"base": 0.40, "candidate": 0.45}, 0.05, True, "at least the margin 0.05"),  # exactly the margin
        ({"base": 0.40, "candidate": 0.44}, 0.05, False, "less than the margin 0.05"),
        ({"base": 0.40, "candidate": 0.30}, 0.0, False, "gained -0.100"),
        ({"base": 0.40, "candidate": 0.90, "well_formed_candidate": 0.8}, 0.05, False, "well-formed rate dropped"),
        ({"base": 0.40, "candidate": 0.90, "well_formed_candidate": 1.0}, 0.05, True, "adopted"),
        ({"base": None, "candidate": None}, 0.05, False, "no figures"),
    ],
)
def test_the_margin_and_the_well_formed_rate_decide(figures, margin, adopted, says):
    decision = decide(evaluated_card(**figures), margin=margin)
    assert decision.adopt is adopted and says in decision.reason
    assert "held-out fidelity: base" in decision.reason and "well-formed: base" in decision.reason


def test_adopt_forces_it_whatever_the_figures_say():
    decision = decide(evaluated_card(base=0.5, candidate=0.1, well_formed_candidate=0.0), margin=0.05, forced=True)
    assert decision.adopt and "on --adopt" in decision.reason and "candidate 0.100" in decision.reason


def test_a_revert_marks_the_card_of_the_run_whose_candidate_it_undid(tmp_path):
    candidate = tmp_path / "adapter.gguf"
    candidate.write_bytes(b"adapter")
    evaluated_run(tmp_path, candidate, tmp_path / "base.gguf")
    digest = read_card(tmp_path)["candidate"]["sha256"]
    mark_reverted(tmp_path, "f" * 64)  # another file (the run was redone since): the card stays as it is
    assert read_card(tmp_path)["status"] == "evaluated"
    mark_reverted(tmp_path, digest)
    card = read_card(tmp_path)
    assert card["status"] == "reverted" and card["adoption"]["reverted"]
    assert "reverted: " in (tmp_path / "MODEL_CARD.md").read_text()
    mark_reverted(tmp_path / "gone", digest)  # a run folder removed since: nothing to mark, no error
