"""Record stores: one protocol (`protocol.py`), two stores (`sqlite/` embedded,
`redis/` for replicas), the log that spools records when a store is down
(`record_log.py`), group commit, the store rules both stores apply
(`store_rules.py`, `judge_summary.py`), the noise table's counts
(`noise_counts.py`), and read-only queries. The state replicas share beside the
records, local or in Redis, is records/shared_state/ (the one place that chooses).

May import: `calls` and the record itself (`records.record`, `records.record_json`,
`records.errors`, and the pure readers `records.servable`, `records.sub_provenance`).
"""
