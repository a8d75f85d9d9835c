"""The shell's world state: what a session's sandbox holds, and answers from it.

`state.py` the state (`ShellWorld`: the virtual filesystem of `filesystem.py`, the
working directory, environment variables, the last exit code; JSON in and out) and
`seed_files`; `sandbox.py` the facts of the project's sandbox image the answers must
match; `caps.py` the bounds on what one session keeps; `parse.py` a bash command line's
structure (`syntax.py`) from tree-sitter-bash; `words.py` expansion of its words;
`commands/` the programs and builtins the executor knows; `executor.py` runs a line
against the state (`run`); `observe.py` learns the state from an answer the agent got
(`observe`), with `learn.py` (what an answer shows) and `touched.py` (what a line may
have changed).

Pure and deterministic: no I/O, no clock (the state carries its own), microseconds to
a millisecond per command line.
"""

from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.executor import ShellOutcome, run, run_or_raise
from backends.world_state.shell.observe import observe
from backends.world_state.shell.state import ShellWorld, new_world, seed_files

__all__ = ["ShellOutcome", "ShellWorld", "Unanswerable", "new_world", "observe", "run", "run_or_raise", "seed_files"]
