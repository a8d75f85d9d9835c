"""The embedded SQLite store: `store.py` (`SqliteStore`), its schema and migrations,
the writer thread, WAL checkpoints, minute counts, replay sources, dashboard queries."""
