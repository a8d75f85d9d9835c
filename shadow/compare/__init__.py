"""Comparing a real and a simulated (or two real) observations: canonical forms
(`canonical.py`, `http_canonical.py`, `observation_forms.py`), the divergence score
and kind (`divergence.py` over `tree_diff.py`, `text_diff.py`, `line_diff.py`,
`value_shapes.py`), and noise: which differences are expected (`noise.py`) and the
learner that fills the noise table from real pairs (`noise_learner.py`).
"""
