"""`observe(state, command_line, answer, provenance=…)`: what an answer the agent got
teaches the shell state, whichever route served it.

First the line's effects. The executor replays the line on a copy of the state: when it
shows what the answer shows, its effects are the line's (a `> f` write, rm, mkdir, cd…),
on the real route too, so real → sim → real stays consistent. When it cannot, or a real
or replayed answer shows otherwise (the state was wrong), whatever the line may have
changed is forgotten (touched.py): unknown, so later questions go to the model or to the
real side, never to a guess. A simulated answer that contradicts what the state can
answer does not change the state: the state wins over the model.

Then what the answer shows: `cat f` shows f's content, `ls` a directory's names, `test
-e` whether a path exists, the answer's cwd the working directory. A real or replayed
answer overrides what the state held; a simulated one only fills what the state does not
know, marked invented (a later real answer overrides it, and nothing invented ever
overrides what a real answer taught).

An answer `run` gave has already changed the state: it is not observed again (its
effects would apply twice).
"""

from __future__ import annotations

from typing import Protocol

from backends.world_state.shell import caps, learn, sandbox
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.executor import run_or_raise
from backends.world_state.shell.filesystem import normalize
from backends.world_state.shell.state import ShellWorld
from backends.world_state.shell.touched import touched
from calls import Provenance


class Answer(Protocol):
    """What the agent saw (backends.shell.screen.ShellResult is one)."""

    output: str
    exit_code: int | None
    cwd: str | None


def observe(state: ShellWorld, command_line: str, answer: Answer, *, provenance: Provenance | str) -> None:
    """Updates `state` in place from one command line and the answer the agent got."""
    real = Provenance(provenance) in (Provenance.REAL, Provenance.REPLAY)
    if getattr(answer, "reset", None):
        _forget_everything(state)  # the sandbox or its shell was replaced before the command
    if answer.exit_code is None or getattr(answer, "truncated", False) or getattr(answer, "error", None):
        _forget_touched(state, command_line)  # stopped part way, or not all shown: its effects are unknown
        _settle(state, answer)
        return
    cwd_before = state.cwd
    trial = state.copy()
    try:
        outcome = run_or_raise(trial, command_line)
    except Unanswerable:
        outcome = None
    if outcome is not None and (not real or (outcome.output, outcome.exit_code) == (answer.output, answer.exit_code)):
        state.take(trial)
        if not real:
            return  # the state's own answer, or a simulation contradicting it: nothing to learn
    else:
        _forget_touched(state, command_line)
    learn.from_answer(state, command_line, answer.output, answer.exit_code, cwd=cwd_before, invented=not real)
    _settle(state, answer)
    caps.enforce(state.fs)


def _settle(state: ShellWorld, answer: Answer) -> None:
    """The shell's own report: its working directory and exit code."""
    if answer.exit_code is not None:
        state.exit_code = answer.exit_code
    if answer.cwd and answer.cwd.startswith("/"):
        cwd = normalize(answer.cwd, "/")
        learn.ensure_directory(state, cwd)
        if cwd != state.cwd:
            # OLDPWD: the executor set it for a line it ran; for one it could not run,
            # touched.py made it unknown.
            state.env["PWD"], state.cwd = cwd, cwd


def _forget_touched(state: ShellWorld, command_line: str) -> None:
    found = touched(command_line)
    fs = state.fs
    if found.anywhere:
        fs.forget_entries(state.cwd)
    for operand in found.paths:
        path = normalize(operand, state.cwd)
        if path == state.cwd or state.cwd.startswith(path.rstrip("/") + "/"):
            fs.forget_entries(path)  # the working directory stays where the shell says it is
        else:
            fs.forget(path)
    if found.new_files_here:
        fs.forget_listing(state.cwd)
    for name in found.variables:
        state.env[name] = None


def _forget_everything(state: ShellWorld) -> None:
    """After a sandbox reset: nothing the agent's shell wrote is known, and the shell
    starts afresh."""
    for mount in sandbox.MOUNTS:
        state.fs.forget_entries(mount)
    state.env = dict(sandbox.ENV)
