"""What an answer shows about the filesystem, learnt into the state: a file's content
from `cat f`, a directory's names (and kinds, with -l) from `ls`, existence from `test`.

Only from a line that is one simple command, with no redirection, whose words the state
can expand, and an answer shown whole. `invented` (a simulated answer) only fills what
the state does not know and never removes; a real or replayed answer overrides.
"""

from __future__ import annotations

import re
from dataclasses import replace

from backends.world_state.shell import sandbox
from backends.world_state.shell.commands.base import options
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR, FILE, Node, join, normalize, parent_of
from backends.world_state.shell.parse import parse_line
from backends.world_state.shell.state import ShellWorld
from backends.world_state.shell.words import expand

_LONG_LINE = re.compile(
    r"([-dlcbps])([-rwxsStT]{9})[.+]? +\d+ +(\S+) +\S+ +\d+ +[A-Z][a-z]{2} +\d+ +(?:\d\d:\d\d|\d{4}) (.*)"
)
_KINDS = {"-": FILE, "d": DIR}


def from_answer(
    state: ShellWorld, command_line: str, output: str, exit_code: int | None, *, cwd: str, invented: bool
) -> None:
    argv = _simple_argv(state, command_line, cwd)
    if not argv:
        return
    try:
        if argv[0] == "cat" and len(argv) == 2 and not argv[1].startswith("-") and exit_code == 0:
            set_content(state, normalize(argv[1], cwd), output, invented=invented)
        elif argv[0] == "ls" and exit_code == 0:
            _listing(state, argv[1:], output, cwd, invented=invented)
        elif argv[0] in ("test", "[") and exit_code in (0, 1):
            words = argv[1:-1] if argv[0] == "[" and argv[-1:] == ["]"] else argv[1:]
            if len(words) == 2 and words[0] in ("-e", "-f", "-d"):
                _existence(state, normalize(words[1], cwd), words[0], exit_code == 0, invented=invented)
    except Unanswerable:
        return  # what the answer shows does not fit what the state can place: nothing learnt


def _simple_argv(state: ShellWorld, command_line: str, cwd: str) -> list[str]:
    try:
        script = parse_line(command_line)
        if len(script) != 1 or len(script[0].pipelines) != 1 or len(script[0].pipelines[0]) != 1:
            return []
        command = script[0].pipelines[0][0]
        if command.redirects or command.assignments:
            return []

        def variable(name: str) -> str:
            value = str(state.exit_code) if name == "?" else state.env.get(name, "")
            if value is None:
                raise Unanswerable(name)
            return value

        return [a for w in command.words for a in expand(w, variable, variable("HOME"), state.fs, cwd)]
    except Unanswerable:
        return []


def set_content(state: ShellWorld, path: str, text: str, *, invented: bool) -> None:
    fs = state.fs
    node = fs.nodes.get(path)
    if invented and not _unknown_to_state(state, path, node, FILE):
        return
    if node is not None and node.kind == DIR:
        fs.remove(path)  # a real answer read it as a file: the state was wrong
        node = None
    if not ensure_directory(state, parent_of(path), invented=invented):
        return
    mode = node.mode if node is not None else sandbox.FILE_MODE
    owner = node.owner if node is not None else sandbox.owner_of_new(path)
    fs.put(
        path, Node(FILE, mode, content=text, invented=invented, owner=owner, mtime=node.mtime if node else state.clock)
    )


def ensure_directory(state: ShellWorld, path: str, *, invented: bool = False) -> bool:
    """Makes sure `path` is a directory in the store (missing ones added with unknown
    listings). False when the state holds a file on the way and the answer is invented."""
    fs = state.fs
    missing = []
    ancestor = path
    while ancestor not in fs.nodes or fs.nodes[ancestor].kind != DIR:
        node = fs.nodes.get(ancestor)
        if node is not None and node.kind is None:
            fs.nodes[ancestor] = replace(node, kind=DIR, complete=False)  # a name seen before: now known to be a folder
            break
        if node is not None:
            if invented:
                return False
            fs.remove(ancestor)  # a file where a real answer shows a folder: the state was wrong
        missing.append(ancestor)
        if ancestor == "/":
            break
        ancestor = parent_of(ancestor)
    for directory in reversed(missing):
        if directory not in fs.nodes:
            fs.put(
                directory,
                Node(
                    DIR,
                    sandbox.DIR_MODE,
                    complete=False,
                    invented=invented,
                    owner=sandbox.owner_of_new(directory),
                    mtime=state.clock,
                ),
            )
    return True


def _unknown_to_state(state: ShellWorld, path: str, node: Node | None, kind: str) -> bool:
    """Whether an invented fact about `path` contradicts nothing the state holds."""
    if node is not None:
        return node.kind in (kind, None) and (node.content is None or node.invented)
    try:
        return state.fs.lookup(path) is not None  # absent where the listing is complete: the state says so
    except Unanswerable:
        return True


def _listing(state: ShellWorld, args: list[str], output: str, cwd: str, *, invented: bool) -> None:
    flags, operands = options(args, "aAl1")
    if len(operands) > 1:
        return
    path = normalize(operands[0] if operands else ".", cwd)
    node = state.fs.nodes.get(path)
    if node is not None and node.kind == FILE:
        return
    if node is None and operands and output == f"{operands[0]}\n":
        return  # a file named like that, or a directory holding one: the answer cannot tell
    names: dict[str, str | None] = {}
    lines = output.splitlines()
    if "l" in flags:
        if not lines or not lines[0].startswith("total "):
            return
        for line in lines[1:]:
            match = _LONG_LINE.fullmatch(line)
            if match is None:
                return
            names[match.group(4)] = _KINDS.get(match.group(1), "other")
    else:
        names = dict.fromkeys(lines)
    names.pop(".", None)
    names.pop("..", None)
    if "other" in names.values():
        return  # links, devices: the state holds none
    if invented:
        if node is not None and node.kind == DIR and node.complete:
            return
        if not ensure_directory(state, path, invented=True):
            return
        for name, kind in names.items():
            if join(path, name) not in state.fs.nodes:
                state.fs.put(
                    join(path, name),
                    Node(
                        kind,
                        complete=False,
                        invented=True,
                        owner=sandbox.owner_of_new(join(path, name)),
                        mtime=state.clock,
                    ),
                )
        return
    ensure_directory(state, path)
    shown_all = "a" in flags or "A" in flags
    for name in state.fs.known_names(path) - set(names):
        if shown_all or not name.startswith("."):
            state.fs.remove(join(path, name))
    for name, kind in names.items():
        child = state.fs.nodes.get(join(path, name))
        if child is None or (kind is not None and child.kind != kind):
            if child is not None:
                state.fs.remove(join(path, name))
            state.fs.put(
                join(path, name),
                Node(kind, complete=kind != DIR, owner=sandbox.owner_of_new(join(path, name)), mtime=state.clock),
            )
    # Every name is now known, dot-names only if the listing showed them.
    node = state.fs.nodes[path]
    state.fs.nodes[path] = replace(node, complete=True, hidden_known=shown_all or (node.complete and node.hidden_known))


def _existence(state: ShellWorld, path: str, test: str, holds: bool, *, invented: bool) -> None:
    fs = state.fs
    node = fs.nodes.get(path)
    kind = {"-f": FILE, "-d": DIR}.get(test)
    if holds:
        if node is not None and (kind is None or node.kind == kind):
            return
        if invented and not _unknown_to_state(state, path, node, kind or FILE):
            return
        if node is not None:
            fs.remove(path)
        if ensure_directory(state, parent_of(path), invented=invented):
            fs.put(
                path,
                Node(
                    kind, complete=kind != DIR, invented=invented, owner=sandbox.owner_of_new(path), mtime=state.clock
                ),
            )
    elif test == "-e" and not invented and node is not None:
        fs.remove(path)
