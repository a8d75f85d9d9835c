"""bash's test and [ builtins, by the POSIX rules on the number of arguments (up to four:
longer expressions with -a/-o and parentheses are left to the world model)."""

from __future__ import annotations

import re

from backends.world_state.shell.commands.base import Context
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR, FILE

_UNARY = frozenset("-e -f -d -s -r -w -x -z -n -L -h -b -c -p -S".split())
_BINARY = frozenset("= == != -eq -ne -lt -le -gt -ge".split())
_INTEGER = re.compile(r"\s*[-+]?\d+\s*")


class _Failed(Exception):
    """test's own error (exit code 2), its message already said."""


def test(ctx: Context, args: list[str]) -> int:
    return _run(ctx, "test", args)


def bracket(ctx: Context, args: list[str]) -> int:
    if not args or args[-1] != "]":
        ctx.bash_error("[: missing `]'")
        return 2
    return _run(ctx, "[", args[:-1])


def _run(ctx: Context, name: str, args: list[str]) -> int:
    try:
        return 0 if _evaluate(ctx, name, args) else 1
    except _Failed:
        return 2


def _evaluate(ctx: Context, name: str, args: list[str]) -> bool:
    count = len(args)
    if count == 0:
        return False
    if count == 1:
        return args[0] != ""
    if count == 2:
        if args[0] == "!":
            return not _evaluate(ctx, name, args[1:])
        if args[0] in _UNARY:
            return _unary(ctx, args[0], args[1])
        return _fail(ctx, name, f"{args[0]}: unary operator expected")
    if count == 3:
        if args[1] in _BINARY:
            return _binary(ctx, name, *args)
        if args[1] in ("-a", "-o", "<", ">", "-nt", "-ot", "-ef"):
            raise Unanswerable(f"test {args[1]} is not answered from state")
        if args[0] == "!":
            return not _evaluate(ctx, name, args[1:])
        if args[0] == "(" and args[2] == ")":
            return _evaluate(ctx, name, args[1:2])
        return _fail(ctx, name, f"{args[1]}: binary operator expected")
    if count == 4 and args[0] == "!":
        return not _evaluate(ctx, name, args[1:])
    raise Unanswerable("a test expression of more than three terms")


def _fail(ctx: Context, name: str, text: str) -> bool:
    ctx.bash_error(f"{name}: {text}")
    raise _Failed


def _unary(ctx: Context, op: str, operand: str) -> bool:
    if op == "-z":
        return operand == ""
    if op == "-n":
        return operand != ""
    if operand == "":
        return False
    node = ctx.lookup(operand)
    if node is None:
        return False
    if op == "-e":
        return True
    if node.kind is None:
        raise Unanswerable(f"whether {operand} is a file or a directory is not known")
    if op == "-f":
        return node.kind == FILE
    if op == "-d":
        return node.kind == DIR
    if op == "-s":
        return node.kind == DIR or len(ctx.read(ctx.path(operand)).encode()) > 0
    if op in ("-r", "-w", "-x"):
        if not node.owner or node.fixed is not None and op == "-w":
            raise Unanswerable(f"the permissions of {operand} are not known")  # the image's root is read-only too
        bit = {"-r": 4, "-w": 2, "-x": 1}[op]
        shift = 6 if node.owner == "agent" else 0
        return bool(node.mode >> shift & bit)
    return False  # -L -h -b -c -p -S: the state holds no links, devices, pipes or sockets


def _binary(ctx: Context, name: str, left: str, op: str, right: str) -> bool:
    if op in ("=", "=="):
        return left == right
    if op == "!=":
        return left != right
    for value in (left, right):
        if not _INTEGER.fullmatch(value):
            _fail(ctx, name, f"{value}: integer expression expected")
    a, b = int(left), int(right)
    return {"-eq": a == b, "-ne": a != b, "-lt": a < b, "-le": a <= b, "-gt": a > b, "-ge": a >= b}[op]
