"""Comparing a real and a simulated (or two real) observations: canonical forms
(`http_canonical.py`, `observation_forms.py`; a call's own keys are calls/keys.py),
the divergence score and kind (`divergence.py` over `tree_diff.py`, `text_diff.py`,
`line_diff.py`, `value_shapes.py`), and noise: which differences are expected
(`noise.py`; the counts it reads, as the stores keep them, are
records/store/noise_counts.py). The learner that fills the noise table from real
pairs watches calls and writes the store, so it sits beside them
(`shadow/noise_learner.py`).
"""
