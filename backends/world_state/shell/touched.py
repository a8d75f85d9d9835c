"""What a command line may have changed, read leniently from any bash the grammar parses
(loops, subshells and substitutions included): for `observe`, when the state could not
follow a line the agent ran, so what the line names must be forgotten, not guessed.

Programs known to change no file change nothing; the executor's own file commands
(rm, mv, cp, mkdir, touch) and a few like them change what they name; any other program
may also create files where it runs. A name only known at run time (`$f`, `*.txt`,
`$(…)`) may be any file: everything below the working directory is then forgotten.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from backends.world_state.shell.parse import bash_parser

READ_ONLY = frozenset(
    "cat ls grep egrep fgrep wc head tail pwd echo printf test [ true false : cd export unset env printenv which type "
    "stat file du df diff cmp sort uniq cut tr basename dirname realpath readlink sleep seq date whoami id hostname "
    "uname ps md5sum sha1sum sha256sum less more nl od xxd hexdump column jq".split()
)
NAMES_ONLY = frozenset("rm mv cp mkdir rmdir touch ln chmod chown tee truncate".split())
_STATIC = ("word", "raw_string", "number")


@dataclass(frozen=True, slots=True)
class Touched:
    paths: frozenset[str] = frozenset()  # operands and redirection targets, as written
    anywhere: bool = False  # a name only known at run time: anything below the cwd
    new_files_here: bool = False  # a program that may create files in the cwd
    variables: frozenset[str] = frozenset()  # variables the line assigns


@dataclass(slots=True)
class _Found:
    paths: set[str] = field(default_factory=set)
    anywhere: bool = False
    new_files_here: bool = False
    variables: set[str] = field(default_factory=set)


@lru_cache(maxsize=1024)
def touched(command_line: str) -> Touched:
    tree = bash_parser().parse(command_line.encode("utf-8", "surrogateescape"))
    found = _Found()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "command":
            _command(node, found)
        elif node.type == "file_redirect":
            _redirect(node, found)
        elif node.type == "variable_assignment":
            name = node.child_by_field_name("name")
            if name is not None and name.text is not None:
                found.variables.add(name.text.decode("utf-8", "surrogateescape"))
        elif node.type == "for_statement":
            variable = node.child_by_field_name("variable")
            if variable is not None and variable.text is not None:
                found.variables.add(variable.text.decode("utf-8", "surrogateescape"))
        elif node.is_error or node.is_missing:
            found.anywhere = found.new_files_here = True
        stack.extend(node.children)
    return Touched(frozenset(found.paths), found.anywhere, found.new_files_here, frozenset(found.variables))


def _command(node: Any, found: _Found) -> None:
    name_node = node.child_by_field_name("name")
    words = [
        c
        for c in node.named_children
        if c.type not in ("command_name", "variable_assignment", "file_redirect", "herestring_redirect")
    ]
    name = _static(name_node.named_children[0]) if name_node is not None and name_node.named_children else None
    if name is None:
        found.anywhere = found.new_files_here = True
        return
    program = name.rsplit("/", 1)[-1]
    if program in ("cd", "pushd", "popd"):
        found.variables.update(("PWD", "OLDPWD"))
    args = [_static(w) for w in words]
    if program == "find" and not any(a in ("-delete", "-exec", "-execdir", "-ok", "-fprint") for a in args):
        return
    if program == "sed" and not any(a is not None and a.startswith("-i") for a in args):
        return
    if program in READ_ONLY:
        return
    for arg in args:
        if arg is None:
            found.anywhere = True
        elif not arg.startswith("-"):
            found.paths.add(arg)
    if program not in NAMES_ONLY:
        found.new_files_here = True


def _redirect(node: Any, found: _Found) -> None:
    operator = "".join(c.type for c in node.children if not c.is_named)
    destination = node.child_by_field_name("destination")
    if "<" in operator and ">" not in operator or destination is None or destination.type == "number":
        return
    target = _static(destination)
    if target is None:
        found.anywhere = True
    elif target != "/dev/null":
        found.paths.add(target)


def _static(node: Any) -> str | None:
    """A word's text when it is the same whatever runs (no expansion, no pattern)."""
    text = node.text.decode("utf-8", "surrogateescape") if node.text is not None else ""
    if node.type == "raw_string":
        return text[1:-1]
    if node.type == "string" and all(c.type == "string_content" for c in node.named_children):
        return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if node.type in _STATIC and not any(c in text for c in "*?[$`\\{~"):
        return text
    return None
