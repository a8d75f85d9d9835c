"""What the records room raises, and who handles it: every error below is a
`RecordsError`.

The record store's errors are part of its protocol (`records/store/protocol.py`).
Each store translates its driver's errors at its own boundary, by type, with
`raise ... from exc` (SQLite: `sqlite3.Error` in `sqlite/base.py` and
`sqlite/writes.py`; Redis: `RedisError`, `OSError` and timeouts in `redis/base.py`);
nothing else of the driver leaks out.

- `StoreError` (`protocol.py`): the store could not be opened, read or written.
  Raised by `SQLiteStore` and `RedisStore`. The record log catches it on writes
  and spools the record; the engine, when shared session state fails, counts on
  this replica alone; the learned router and the dashboard report it and retry.
  - `StoreBusy`: the SQLite file stayed locked past the busy timeout (another
    writer holds it); the record log spools, as for any `StoreError`.
- `RecordError` (`protocol.py`): a record could be written neither to the store
  nor to the spool (`store/record_log.py`). The engine and the HTTP channel fail
  closed: the call does not run unrecorded. Shadow work leaves the record pending
  for the next drain.
- `QueryError` (`store/queries.py`): a filter or record id the user gave cannot be
  used; the command line prints its message.
- `JudgeError` (`judge/run.py`): the judge model gave no answer for one pair (a
  timeout, its server's error; router/runtime/judge_model.py translates the
  engine's errors): the pair counts as failed and `simroute judge` goes on.
  - `JudgeUnavailable`: the judge's endpoint cannot be reached: the run stops
    and the command line says where it looked.
- `IdempotencyError` (`shared_state/answers.py`, also a `ValueError`): an idempotency
  key that is malformed or was used for another action; `IdempotencyLost` (also a
  `RuntimeError`): the replica answering the key stopped before it answered. The
  router's MCP front door and episode host record the refusal (provenance `none`).
- `RedactionKeyError` (`redaction.py`): the redaction key cannot be read or
  created; it stops the router at startup.

Shadow work (shadow/) raises nothing to the agent: it runs after the agent was
answered, and its few `except Exception` are boundaries that record or log the
failure (shadow/runner.py, shadow/noise_learner.py), each saying so where it stands.
"""

from __future__ import annotations


class RecordsError(Exception):
    """The base of what the records room raises on purpose (see module doc)."""
