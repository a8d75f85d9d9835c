"""findutils' find with `-name`, `-iname`, `-type f|d` and `-maxdepth` (and `-print`):
each starting point, then its entries depth first in the order tmpfs lists them
(newest first)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from backends.world_state.shell.commands.base import Context, quote_locale
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR, join, name_of


@dataclass(frozen=True, slots=True)
class _Test:
    kind: str  # "name", "iname", "type"
    value: str


def find(ctx: Context, args: list[str]) -> int:
    starts: list[str] = []
    while args and not args[0].startswith("-") and args[0] not in ("(", "!"):
        starts.append(args.pop(0))
    tests, maxdepth = _expression(args)
    code = 0
    for start in starts or ["."]:
        node = ctx.lookup(start)
        if node is None:
            ctx.err(f"find: {quote_locale(start)}: {ctx.missing(start)}\n")
            code = 1
            continue
        _walk(ctx, start, ctx.path(start), 0, tests, maxdepth)
    return code


def _expression(args: list[str]) -> tuple[list[_Test], int | None]:
    tests: list[_Test] = []
    maxdepth = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-print":
            i += 1
            continue
        if arg not in ("-name", "-iname", "-type", "-maxdepth") or i + 1 >= len(args):
            raise Unanswerable(f"find {arg} is not answered from state")
        value = args[i + 1]
        i += 2
        if arg == "-maxdepth":
            if tests or not value.isdigit():
                raise Unanswerable("find -maxdepth after a test")
            maxdepth = int(value)
        elif arg == "-type" and value not in ("f", "d"):
            raise Unanswerable(f"find -type {value} is not answered from state")
        elif "[:" in value:
            raise Unanswerable("a bracket class in a find pattern")
        else:
            tests.append(_Test(arg[1:], value))
    return tests, maxdepth


def _walk(ctx: Context, shown: str, path: str, depth: int, tests: list[_Test], maxdepth: int | None) -> None:
    fs = ctx.world.fs
    node = fs.nodes[path]
    if node.kind is None:
        raise Unanswerable(f"whether {shown} is a directory is not known")
    if _matches(shown if depth == 0 else name_of(path), node.kind, tests):
        ctx.out(shown + "\n")
    if node.kind != DIR or (maxdepth is not None and depth >= maxdepth):
        return
    for name in fs.names(path):
        child = shown + name if shown.endswith("/") else f"{shown}/{name}"
        _walk(ctx, child, join(path, name), depth + 1, tests, maxdepth)


def _matches(shown: str, kind: str, tests: list[_Test]) -> bool:
    base = shown.rstrip("/").rsplit("/", 1)[-1] or "/"
    for test in tests:
        if test.kind == "name" and not fnmatch.fnmatchcase(base, test.value):
            return False
        if test.kind == "iname" and not fnmatch.fnmatchcase(base.lower(), test.value.lower()):
            return False
        if test.kind == "type" and (kind == DIR) != (test.value == "d"):
            return False
    return True
