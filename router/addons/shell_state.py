"""Keeps the session's shell state (backends/shell/state.py) from every shell answer
the agent gets, whatever route served it: real, replayed or simulated. A perturbed
answer (a fault, a cut) and simroute's own answers (a denial, a deadline, a refusal)
say nothing about the shell and change nothing."""

from __future__ import annotations

from backends.shell.state import ShellState
from calls import Provenance
from records.record import Record
from router.engine.addons import CallAddon
from router.engine.pending import Pending


class ShellStateKeeper(CallAddon):
    async def finished(self, pending: Pending, record: Record) -> None:
        served = record.served
        if record.call.channel != "shell" or record.perturbation is not None or served.provenance is Provenance.NONE:
            return
        structured = served.structured if isinstance(served.structured, dict) else {}
        cwd, exit_code = structured.get("cwd"), structured.get("exit_code")
        if not isinstance(cwd, str) and not isinstance(exit_code, int):
            return  # an answer that does not show the shell (an unparsed simulation)
        state = pending.session.slice(ShellState)
        state.cwd = cwd if isinstance(cwd, str) else state.cwd
        state.exit_code = exit_code if isinstance(exit_code, int) else None
        state.said_by = str(served.provenance)
