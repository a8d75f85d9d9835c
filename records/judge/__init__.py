"""Judging simulations (`simroute judge`): a judge model scores a simulated
observation against the real one on AgentWorldBench's five dimensions.

- `prompt.py`: the judging prompt (one place, versioned) and the verdict parser;
- `pairs.py`: which records give pairs: simulated vs real (shadow pairs), and the
  real-vs-real control pairs (two real answers to the same call from two sessions)
  that show the judge's score for "indistinguishable";
- `run.py`: the driver: each pair put to the judge (a malformed verdict asked once
  more, then counted as failed), the scores stored beside the records;
- `report.py`: the run's summary: means per dimension (1–5 and 0–100), the control
  floor, the failure rate, the rank agreement with the rule-based divergence.
"""
