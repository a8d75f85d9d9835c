"""The sim route's HTTP answers from the session's resource state (backends/world_state/
http), and the recordings that state starts from.

Before a session's first simulated call to an API, the newest real answers other
sessions recorded from it (at most `per_method` of each method, those the session may
see: `ReplayBackend.visible`, as replay and the world model's examples) are learnt, in
the order they were made, into a view of the API that lies beneath what the session
learnt itself (http/baseline.py): a session that simulates `POST /items` after another
recorded one knows the API's id kind, its create status and the items it listed. Read
once per session and API; a store that cannot be read leaves the session's own state
(the model answers what it does not determine).
"""

from __future__ import annotations

import logging
import time

from backends.http.messages import observation_of
from backends.replay import ReplayBackend, servable_record
from backends.world_state import http
from backends.world_state.http.baseline import underlay
from calls import Call, Observation, Provenance, Session
from records.record import Record
from records.store.protocol import StoreError

log = logging.getLogger("simroute.world_state")

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


class RecordedApis:
    def __init__(self, replay: ReplayBackend, *, per_method: int = 50) -> None:
        self.replay = replay
        self.per_method = per_method

    async def read_into(self, world: http.HttpWorld, call: Call, session: Session) -> None:
        """The recordings of `call`'s API beneath `world`'s view of it (once per session)."""
        known = world.apis.get(call.server)
        if known is not None and known.recorded:
            return
        rows = []
        try:
            for method in METHODS:
                rows += await self.replay.store.examples(
                    "http",
                    call.server,
                    method,
                    exclude_session=session.id,
                    call_key=None,
                    limit=self.per_method,
                    namespaces=self.replay.visible_namespaces(session.id),
                )
        except StoreError as exc:  # read again at the session's next simulated call
            log.warning("recordings of %s not read for the world state: %s", call.server, exc)
            return
        recorded = http.HttpWorld()
        for record in sorted(map(Record.from_json, rows), key=lambda record: (record.ts, record.step)):
            if self.replay.visible(session.id, record.call.session_id) and servable_record(record):
                http.observe(recorded, record.call, record.served, provenance=record.served.provenance)
        api = world.api(call.server)
        if call.server in recorded.apis:
            underlay(api, recorded.apis[call.server])
        api.recorded = True


async def answer_from_state(
    session_world: http.HttpWorld, call: Call, recordings: RecordedApis | None, session: Session
) -> tuple[Observation, bool] | None:
    """The state's answer to a simulated HTTP call, its effects applied, and whether it
    shows what a simulated answer made up; None: the state does not determine it."""
    started = time.perf_counter()
    if recordings is not None:
        await recordings.read_into(session_world, call, session)
    outcome = http.answer(session_world, call)
    if outcome is None:
        return None
    return observation_of(outcome.structured, Provenance.SIM, latency_s=time.perf_counter() - started), outcome.invented
