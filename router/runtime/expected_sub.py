"""The learned router's guess, made without I/O, of the sub-provenance a simulated
shell call would be answered with (policies/learned/subs.py): `state` when the
world-state executor runs every program of the line (backends/world_state/shell), else
`model+state` (the world model, told the state the line touches).

A guess: a program the executor runs may still leave the line to the model (`cat` of a
file the state does not hold, an option it does not answer). The labels are what the
sim side really answered with; this only picks which of them a call is judged by.
Policies may not import backends, so the runtime hands this to the learned router.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from backends.world_state.shell.commands import COMMANDS
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.parse import parse_line
from backends.world_state.shell.syntax import Simple
from calls import Call, Session

STATE, MODEL_STATE = "state", "model+state"


def expected_sub(on_for: Callable[[str, str], bool]) -> Callable[[Call, Session], str | None]:
    """The hook for `LearnedPolicy(expected_sub=…)`; `on_for`: the world_state section's
    switch (off for a channel or server: its calls go to the model, the tool's usual sub)."""

    def guess(call: Call, session: Session) -> str | None:
        if call.channel != "shell" or not on_for(call.channel, call.server):
            return None
        command = call.arguments.get("command")
        if not isinstance(command, str):
            return None
        return STATE if runs_from_state(command) else MODEL_STATE

    return guess


@lru_cache(maxsize=4096)
def runs_from_state(command: str) -> bool:
    """Whether every simple command of the line names a program the executor runs."""
    try:
        script = parse_line(command)
    except Unanswerable:
        return False
    return all(_known(simple) for statement in script for pipeline in statement.pipelines for simple in pipeline)


def _known(simple: Simple) -> bool:
    if not simple.words:  # assignments or redirections only
        return True
    name = simple.words[0]
    return not any(part.var for part in name) and "".join(part.text for part in name) in COMMANDS
