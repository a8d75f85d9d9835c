"""The adoption rule on model cards: a candidate is adopted on --adopt, or when its
held-out fidelity (world-state layer off) beats the base's by the margin and its
well-formed rate does not drop; a refusal names the figures it was decided on."""

from __future__ import annotations

import pytest
from kit.tune_run import evaluated_card

from router.tune.adoption import decide


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
