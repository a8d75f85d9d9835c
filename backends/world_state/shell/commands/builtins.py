"""bash's own commands that touch the shell rather than files: echo, cd, pwd, export,
unset, true, false. Their errors carry bash's `main: line N:` prefix (sandbox.py)."""

from __future__ import annotations

import re

from backends.world_state.shell.commands.base import Context
from backends.world_state.shell.commands.escapes import backslash_escapes
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR

_ECHO_OPTION = re.compile(r"-[neE]+")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def echo(ctx: Context, args: list[str]) -> int:
    newline, escapes = True, False
    while args and _ECHO_OPTION.fullmatch(args[0]):
        for letter in args[0][1:]:
            newline = newline and letter != "n"
            escapes = (escapes or letter == "e") and letter != "E"
        args = args[1:]
    text = " ".join(args)
    if escapes:
        text, stop = backslash_escapes(text, echo=True)
        newline = newline and not stop
    ctx.out(text + ("\n" if newline else ""))
    return 0


def cd(ctx: Context, args: list[str]) -> int:
    if args and args[0] == "--":
        args = args[1:]
    if args and args[0].startswith("-") and args[0] != "-":
        raise Unanswerable(f"cd {args[0]} is not answered from state")
    if len(args) > 1:
        ctx.bash_error("cd: too many arguments")
        return 1
    env = ctx.world.env
    announce = False
    if not args:
        target = env.get("HOME")
        if target is None:
            raise Unanswerable("cd with HOME not known")
    elif args[0] == "-":
        if "OLDPWD" not in env:
            ctx.bash_error("cd: OLDPWD not set")
            return 1
        target = env["OLDPWD"]
        if target is None:
            raise Unanswerable("cd - with OLDPWD not known")
        announce = True
    else:
        target = args[0]
    if target == "":
        return 0  # bash: `cd ""` stays
    node = ctx.lookup(target)
    if node is None or node.kind != DIR:
        if node is not None and node.kind is None:
            raise Unanswerable(f"whether {target} is a directory is not known")
        reason = ctx.missing(target) if node is None else "Not a directory"
        ctx.bash_error(f"cd: {target}: {reason}")
        return 1
    new = ctx.path(target)
    env["OLDPWD"], env["PWD"] = ctx.world.cwd, new
    ctx.world.cwd = new
    if announce:
        ctx.out(new + "\n")
    return 0


def pwd(ctx: Context, args: list[str]) -> int:
    if any(a not in ("-L", "-P") for a in args):
        raise Unanswerable("pwd with operands")
    ctx.out(ctx.world.cwd + "\n")
    return 0


def export(ctx: Context, args: list[str]) -> int:
    if not args or args[0].startswith("-"):
        raise Unanswerable("export's listing or options are not answered from state")
    code = 0
    for arg in args:
        name, eq, value = arg.partition("=")
        if not _NAME.fullmatch(name):
            ctx.bash_error(f"export: `{arg}': not a valid identifier")
            code = 1
        elif eq:
            ctx.world.env[name] = value
    return code


def unset(ctx: Context, args: list[str]) -> int:
    if args and args[0] == "-v":
        args = args[1:]
    if any(a.startswith("-") for a in args):
        raise Unanswerable("unset -f is not answered from state")
    code = 0
    for name in args:
        if not _NAME.fullmatch(name):
            ctx.bash_error(f"unset: `{name}': not a valid identifier")
            code = 1
        else:
            ctx.world.env.pop(name, None)
    return code


def true(ctx: Context, args: list[str]) -> int:
    return 0


def false(ctx: Context, args: list[str]) -> int:
    return 1
