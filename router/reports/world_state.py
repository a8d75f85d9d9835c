"""A session's world state as simroute keeps it, rebuilt from its records (every
route's shell and HTTP answer, oldest first, as the live addon learnt them), and what
it would answer a shell or HTTP call: for `simroute explain --session`."""

from __future__ import annotations

from typing import Any

from backends.world_state import http
from backends.world_state.session import WorldState, rebuilt
from backends.world_state.shell import run
from backends.world_state.shell_view import state_view
from calls import Call
from records.store.protocol import RecordStore

RECORDS_READ = 100_000


async def session_world(store: RecordStore, session_id: str) -> WorldState:
    records = await store.session_records(session_id, before_step=2**62, limit=RECORDS_READ)
    turns = [
        (r.call, r.served, r.perturbation is not None, r.ts)
        for r in records
        if r.status != "started"
        and (
            r.call.channel == "http" or (r.call.channel == "shell" and isinstance(r.call.arguments.get("command"), str))
        )
    ]
    return rebuilt(turns)


def would_answer(state: WorldState, call: Call) -> dict[str, Any]:
    """How the sim route would answer `call` from `state` (nothing changes in it)."""
    if call.channel == "http":
        outcome = http.answer(state.http_world().copy(), call)
        if outcome is None:
            return {"sub": "model"}
        return {"sub": "state", "status": outcome.status, "body": outcome.structured.get("body")}
    command = call.arguments.get("command")
    if call.channel != "shell" or not isinstance(command, str):
        return {}
    world = state.shell_world().copy()
    ran = run(world, command)
    if ran is None:
        return {"sub": "model+state", "told": state_view(state.shell_world(), command)}
    return {"sub": "state", "output": ran.output, "exit_code": ran.exit_code, "cwd": ran.cwd}
