"""coreutils' cat, touch, mkdir and rm against the virtual filesystem."""

from __future__ import annotations

from dataclasses import replace

from backends.world_state.shell.commands.base import (
    Context,
    options,
    quote_always,
    quote_if_needed,
    quote_locale,
    split_lines,
    usage_error,
)
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR, FILE, parent_of


def cat(ctx: Context, args: list[str]) -> int:
    flags, operands = options(args, "nu", program="cat")
    code = 0
    number = 0
    for operand in operands or ["-"]:
        if operand == "-":
            text = ctx.stdin()
        else:
            node = ctx.lookup(operand)
            if node is None or node.kind != FILE:
                if node is not None and node.kind is None:
                    raise Unanswerable(f"whether {operand} is a file is not known")
                reason = ctx.missing(operand) if node is None else "Is a directory"
                ctx.err(f"cat: {quote_if_needed(operand)}: {reason}\n")
                code = 1
                continue
            path = ctx.path(operand)
            if path in ctx.writes_to:
                # cat refuses to copy a file onto itself, unless nothing is left to read
                # (`cat f > f` truncated it first).
                if ctx.world.fs.content(path):
                    ctx.err(f"cat: {quote_if_needed(operand)}: input file is output file\n")
                    code = 1
                continue
            text = ctx.read_or_unknown(path)
        if "n" in flags:
            if text is None:
                raise Unanswerable("cat -n of content the state does not hold")
            lines = split_lines(text)
            numbered = []
            for line in lines:
                number += 1
                numbered.append(f"{number:6d}\t{line}")
            text = "".join(numbered)
        ctx.out(text)
    return code


def touch(ctx: Context, args: list[str]) -> int:
    flags, operands = options(args, "c", program="touch")
    if not operands:
        return usage_error(ctx, "touch", "missing file operand")
    code = 0
    for operand in operands:
        node = ctx.lookup(operand)
        path = ctx.path(operand)
        if node is not None:
            if node.owner != "agent":
                raise Unanswerable(f"touch of {operand}, not the agent's")
            ctx.world.fs.put(path, replace(node, mtime=ctx.world.clock))
            continue
        if "c" in flags:
            continue
        parent = ctx.world.fs.lookup(parent_of(path))
        if operand.endswith("/"):
            if parent is None or parent.kind != DIR:
                raise Unanswerable(f"touch of {operand} in a folder that is not one")
            # touch cannot create a file named as a folder, then fails to set its times.
            ctx.err(f"touch: setting times of {quote_always(operand)}: No such file or directory\n")
            code = 1
            continue
        if parent is None or parent.kind != DIR:
            if parent is not None and parent.kind is None:
                raise Unanswerable(f"whether the folder of {operand} is one is not known")
            reason = "Not a directory" if parent is not None else ctx.missing(operand)
            ctx.err(f"touch: cannot touch {quote_always(operand)}: {reason}\n")
            code = 1
            continue
        ctx.write(path, "", append=False)
    return code


def mkdir(ctx: Context, args: list[str]) -> int:
    flags, operands = options(args, "p", program="mkdir")
    if not operands:
        return usage_error(ctx, "mkdir", "missing operand")
    code = 0
    for operand in operands:
        if not _mkdir_one(ctx, operand, parents="p" in flags):
            code = 1
    return code


def _mkdir_one(ctx: Context, operand: str, *, parents: bool) -> bool:
    path = ctx.path(operand)
    if not parents:
        node = ctx.world.fs.lookup(path)
        parent = ctx.world.fs.lookup(parent_of(path))
        if node is not None:
            reason = "File exists"
        elif parent is None or parent.kind != DIR:
            if parent is not None and parent.kind is None:
                raise Unanswerable(f"whether the folder of {operand} is one is not known")
            reason = "Not a directory" if parent is not None else ctx.missing(operand)
        else:
            ctx.make_dir(path)
            return True
        ctx.err(f"mkdir: cannot create directory {quote_locale(operand)}: {reason}\n")
        return False
    # -p: each component in turn, as the operand spells it.
    pieces = operand.split("/")
    for k in range(1, len(pieces) + 1):
        if pieces[k - 1] in ("", ".") and k < len(pieces):
            continue
        prefix = "/".join(pieces[:k])
        node = ctx.world.fs.lookup(ctx.path(prefix or "/"))
        if node is None:
            ctx.make_dir(ctx.path(prefix))
        elif node.kind is None:
            raise Unanswerable(f"whether {prefix} is a directory is not known")
        elif node.kind != DIR:
            reason = "Not a directory" if k < len(pieces) else "File exists"
            ctx.err(f"mkdir: cannot create directory {quote_locale(prefix)}: {reason}\n")
            return False
    return True


def rmdir(ctx: Context, args: list[str]) -> int:
    _, operands = options(args, "", program="rmdir")
    if not operands:
        return usage_error(ctx, "rmdir", "missing operand")
    code = 0
    for operand in operands:
        if operand.rstrip("/").rsplit("/", 1)[-1] in (".", ".."):
            raise Unanswerable("rmdir of . or ..")
        node = ctx.lookup(operand)
        path = ctx.path(operand)
        if node is not None and node.kind is None:
            raise Unanswerable(f"whether {operand} is a directory is not known")
        if node is None or node.kind != DIR:
            reason = ctx.missing(operand) if node is None else "Not a directory"
        elif ctx.world.fs.names(path):
            reason = "Directory not empty"
        elif ctx.world.cwd == path or node.owner != "agent":
            raise Unanswerable(f"rmdir of {operand} is not answered from state")
        else:
            ctx.may_change(parent_of(path))
            ctx.world.fs.remove(path)
            continue
        ctx.err(f"rmdir: failed to remove {quote_always(operand)}: {reason}\n")
        code = 1
    return code


def rm(ctx: Context, args: list[str]) -> int:
    flags, operands = options(args, "rRf", program="rm")
    force, recursive = "f" in flags, "r" in flags or "R" in flags
    if not operands:
        return 0 if force else usage_error(ctx, "rm", "missing operand")
    code = 0
    for operand in operands:
        path = ctx.path(operand)
        if operand.rstrip("/").rsplit("/", 1)[-1] in (".", "..") or path == "/":
            raise Unanswerable("rm of ., .. or / is not answered from state")
        node = ctx.lookup(operand)
        if node is None:
            if not force:
                ctx.err(f"rm: cannot remove {quote_always(operand)}: {ctx.missing(operand)}\n")
                code = 1
            continue
        if node.kind is None:
            raise Unanswerable(f"whether {operand} is a directory is not known")
        if node.kind == DIR and not recursive:
            ctx.err(f"rm: cannot remove {quote_always(operand)}: Is a directory\n")
            code = 1
            continue
        if ctx.world.cwd == path or ctx.world.cwd.startswith(path + "/"):
            raise Unanswerable("rm of the working directory is not answered from state")
        if node.owner != "agent" or _sticky_other(ctx, path):
            raise Unanswerable(f"rm of {operand}, not the agent's, is not answered from state")
        ctx.may_change(parent_of(path))
        ctx.world.fs.remove(path)
    return code


def _sticky_other(ctx: Context, path: str) -> bool:
    """Whether anything below `path` is someone else's (rm would be refused)."""
    return any(ctx.world.fs.nodes[p].owner != "agent" for p in ctx.world.fs.subtree(path))
