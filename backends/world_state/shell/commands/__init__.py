"""The programs and builtins the executor runs from state, one explicit table.

`base.py` what a command gets (`Context`) and shared pieces (options, name quoting);
`builtins.py` echo, cd, pwd, export, unset, true, false; `printf.py`; `conditions.py`
test and [; `files.py` cat, touch, mkdir, rmdir, rm; `moves.py` mv, cp; `listing.py` ls;
`find.py`; `text.py` wc, head, tail; `grep.py` with `regex.py`; `escapes.py` backslash
escapes. A command raises Unanswerable for what it does not answer (an option, content
the state does not hold): the whole line is then the world model's.
"""

from __future__ import annotations

from backends.world_state.shell.commands import builtins, conditions, files, find, grep, listing, moves, printf, text
from backends.world_state.shell.commands.base import Command, Context

# Builtins run in the shell itself: in a pipeline of several commands each runs in a
# subshell, so cd and export there change nothing after it.
COMMANDS: dict[str, Command] = {
    "echo": builtins.echo,
    "printf": printf.printf,
    "cd": builtins.cd,
    "pwd": builtins.pwd,
    "export": builtins.export,
    "unset": builtins.unset,
    "true": builtins.true,
    ":": builtins.true,
    "false": builtins.false,
    "test": conditions.test,
    "[": conditions.bracket,
    "cat": files.cat,
    "touch": files.touch,
    "mkdir": files.mkdir,
    "rm": files.rm,
    "rmdir": files.rmdir,
    "mv": moves.mv,
    "cp": moves.cp,
    "ls": listing.ls,
    "find": find.find,
    "wc": text.wc,
    "head": text.head,
    "tail": text.tail,
    "grep": grep.grep,
}

__all__ = ["COMMANDS", "Command", "Context"]
