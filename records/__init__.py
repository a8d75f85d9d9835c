"""Records: what was routed, kept. A call's record, the stores that keep records and
the state router replicas share beside them, and what reads records back out
(training data, judging).

- `record.py`, `record_json.py`: the `Record` of a call, as stored, and its JSON.
- `store/`: the record stores behind one protocol (`protocol.py`): SQLite
  (`sqlite/`), Redis (`redis/`), the spool (`record_log.py`), queries, and the
  noise table's counts they keep (`noise_counts.py`).
- `shared_state/`: the state router replicas share beside the records (sessions,
  the upstream guard, idempotency keys, episode rows, leases), one protocol per
  kind with its local and Redis implementations; local or Redis is chosen once,
  where the store is opened (`location.py`).
- `export/`: records as world-model training data (`simroute export`).
- `judge/`: a judge model scoring simulated answers against real ones from the
  records (`simroute judge`).
- `redaction.py`, `secret_patterns.py`: secrets out before anything is stored.
- `owners.py`: who owns a record or a container (a process), and whether it lives.
- `servable.py`: which records may stand for the real side (replay's sources);
  `sub_provenance.py`: how a record's simulated side was made; `fork_point.py`:
  where a session diverged into its fork. Pure readers of a stored record.
- `errors.py`: what this room raises (`RecordsError` and below), and who handles it.

May import: `calls` only. Shadow work and comparison (`shadow`) sit above: they
write and read records, never the reverse.
"""
