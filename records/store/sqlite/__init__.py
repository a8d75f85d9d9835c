"""The embedded SQLite store: `store.py` (`SQLiteStore`, composed of `base.py` and
the `writes`, `reads`, `replay_lookups`, `noise_table` and `maintenance` mixins),
its schema and migrations, the writer thread, WAL checkpoints, minute counts,
replay sources, dashboard queries."""
