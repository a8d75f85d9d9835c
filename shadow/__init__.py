"""Comparison and records.

- `records.py`, `record_json.py`: the `Record` of a call, as stored, and its JSON.
- `compare/`: canonical forms, divergence between two observations, the noise model
  (`noise_learner.py` learns the noise table from real pairs).
- `store/`: the record stores behind one protocol (`protocol.py`): SQLite
  (`sqlite/`), Redis (`redis/`), the spool (`record_log.py`), queries.
- `redaction.py`, `secret_patterns.py`: secrets out before anything is stored.
- `runner.py`, `worker.py`: shadow work off the agent's path (in process, or Redis
  workers).
- `owners.py`: who owns a record or a container (a process), and whether it lives.
- `errors.py`: what shadow raises (`ShadowError` and below), and who handles it.

May import: `router.types` only.
"""
