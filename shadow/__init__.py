"""Shadow work and comparison: the simulated side of a shadowed call, run off the
agent's path and compared with the real answer.

- `runner.py`, `worker.py`: shadow work off the agent's path (in process, or Redis
  workers); `shadow_span.py`: its trace span.
- `compare/`: divergence between two observations, canonical forms of answers, the
  noise model; `noise_learner.py` learns the noise table from real pairs.

Records, their stores, export and judging are records/; a call's keys are
calls/keys.py.

May import: `records` and `calls`.
"""
