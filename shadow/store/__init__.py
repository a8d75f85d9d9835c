"""Record stores: one protocol (`protocol.py`), two stores (`sqlite/` embedded,
`redis/` for replicas), the log that spools records when a store is down
(`record_log.py`), group commit, record JSON, and read-only queries."""
