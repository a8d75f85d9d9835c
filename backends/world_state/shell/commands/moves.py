"""coreutils' mv and cp: sources onto a target, or into a target directory."""

from __future__ import annotations

from dataclasses import replace

from backends.world_state.shell import sandbox
from backends.world_state.shell.commands.base import Context, options, quote_always, usage_error
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR, FILE, Node, join, parent_of


def mv(ctx: Context, args: list[str]) -> int:
    flags, operands = options(args, "f", program="mv")
    plan = _targets(ctx, "mv", operands)
    if isinstance(plan, int):
        return plan
    code = 0
    for source, target in plan:
        if not _move_one(ctx, source, target):
            code = 1
    return code


def cp(ctx: Context, args: list[str]) -> int:
    flags, operands = options(args, "rRf", program="cp")
    plan = _targets(ctx, "cp", operands)
    if isinstance(plan, int):
        return plan
    code = 0
    for source, target in plan:
        if not _copy_one(ctx, source, target, recursive="r" in flags or "R" in flags):
            code = 1
    return code


def _targets(ctx: Context, program: str, operands: list[str]) -> list[tuple[str, str]] | int:
    """(source operand, target operand) pairs, or the exit code of a usage error."""
    if not operands:
        return usage_error(ctx, program, "missing file operand")
    if len(operands) == 1:
        return usage_error(ctx, program, f"missing destination file operand after {quote_always(operands[0])}")
    *sources, destination = operands
    if any(s.rstrip("/").rsplit("/", 1)[-1] in (".", "..", "") for s in sources):
        raise Unanswerable(f"{program} of . or ..")
    node = ctx.lookup(destination)
    if node is not None and node.kind is None:
        raise Unanswerable(f"whether {destination} is a directory is not known")
    if node is not None and node.kind == DIR:
        return [(s, join(destination, s.rstrip("/").rsplit("/", 1)[-1])) for s in sources]
    if len(sources) > 1:
        reason = ctx.missing(destination) if node is None else "Not a directory"
        ctx.err(f"{program}: target {quote_always(destination)}: {reason}\n")
        return 1
    return [(sources[0], destination)]


def _source(ctx: Context, program: str, source: str) -> Node | None:
    node = ctx.lookup(source)
    if node is None:
        ctx.err(f"{program}: cannot stat {quote_always(source)}: {ctx.missing(source)}\n")
    elif node.kind is None:
        raise Unanswerable(f"whether {source} is a directory is not known")
    return node


def _parent_ready(ctx: Context, program: str, source: str, target: str, what: str, *, folder: bool) -> bool:
    """Whether the target's folder exists, and a file is not put where the target names a
    folder (`f` onto `new/`); else says so as `program` does."""
    parent = ctx.world.fs.lookup(parent_of(ctx.path(target)))
    if parent is not None and parent.kind is None:
        raise Unanswerable(f"whether the folder of {target} is one is not known")
    named_as_folder = not folder and target.endswith("/") and ctx.world.fs.lookup(ctx.path(target)) is None
    if parent is not None and parent.kind == DIR and not named_as_folder:
        return True
    reason = "Not a directory" if parent is not None else ctx.missing(target)
    if program == "mv":
        ctx.err(f"mv: cannot move {quote_always(source)} to {quote_always(target)}: {reason}\n")
    else:
        ctx.err(f"cp: cannot create {what} {quote_always(target)}: {reason}\n")
    return False


def _move_one(ctx: Context, source: str, target: str) -> bool:
    node = _source(ctx, "mv", source)
    if node is None:
        return False
    fs, src, dst = ctx.world.fs, ctx.path(source), ctx.path(target)
    if src == dst:
        ctx.err(f"mv: {quote_always(source)} and {quote_always(target)} are the same file\n")
        return False
    if dst.startswith(src + "/") or ctx.world.cwd == src or ctx.world.cwd.startswith(src + "/"):
        raise Unanswerable("a move into itself, or of the working directory")
    if node.owner != "agent":
        raise Unanswerable(f"a move of {source}, not the agent's")
    ctx.may_change(parent_of(src))
    if not _parent_ready(ctx, "mv", source, target, "", folder=node.kind == DIR):
        return False
    existing = fs.lookup(dst)
    if existing is not None:
        if existing.kind is None:
            raise Unanswerable(f"whether {target} is a directory is not known")
        if node.kind == DIR and existing.kind != DIR:
            ctx.err(
                f"mv: cannot overwrite non-directory {quote_always(target)} with directory {quote_always(source)}\n"
            )
            return False
        if node.kind != DIR and existing.kind == DIR:
            ctx.err(f"mv: cannot overwrite directory {quote_always(target)} with non-directory\n")
            return False
        if existing.kind == DIR and fs.names(dst):
            ctx.err(f"mv: cannot move {quote_always(source)} to {quote_always(target)}: Directory not empty\n")
            return False
        fs.remove(dst)
    ctx.may_change(parent_of(dst))
    moved = {p: fs.nodes[p] for p in fs.subtree(src)}
    fs.remove(src)
    for path in sorted(moved, key=len):
        fs.put(dst + path[len(src) :], moved[path])
    fs.renew(dst)  # a renamed entry is listed as the directory's newest
    return True


def _copy_one(ctx: Context, source: str, target: str, *, recursive: bool) -> bool:
    node = _source(ctx, "cp", source)
    if node is None:
        return False
    fs, src, dst = ctx.world.fs, ctx.path(source), ctx.path(target)
    if node.kind == DIR and not recursive:
        ctx.err(f"cp: -r not specified; omitting directory {quote_always(source)}\n")
        return False
    if src == dst:
        ctx.err(f"cp: {quote_always(source)} and {quote_always(target)} are the same file\n")
        return False
    existing = fs.lookup(dst)
    if existing is not None and existing.kind is None:
        raise Unanswerable(f"whether {target} is a directory is not known")
    if node.kind == FILE:
        if existing is not None and existing.kind == DIR:
            ctx.err(f"cp: cannot overwrite directory {quote_always(target)} with non-directory\n")
            return False
        if existing is None and not _parent_ready(ctx, "cp", source, target, "regular file", folder=False):
            return False
        ctx.invented[0] = ctx.invented[0] or node.invented
        ctx.write(dst, node.content, append=False)
        if existing is None:
            fs.put(dst, replace(fs.nodes[dst], mode=node.mode))
        return True
    if dst.startswith(src + "/"):
        raise Unanswerable("a copy of a directory into itself")
    if existing is not None and existing.kind != DIR:
        ctx.err(f"cp: cannot overwrite non-directory {quote_always(target)} with directory {quote_always(source)}\n")
        return False
    if existing is None and not _parent_ready(ctx, "cp", source, target, "directory", folder=True):
        return False
    _copy_tree(ctx, src, dst)
    return True


def _copy_tree(ctx: Context, src: str, dst: str) -> None:
    """A directory's copy, its entries created in the order cp reads them (gnulib's savedir
    sorts them by inode number: the order the files were made in)."""
    fs = ctx.world.fs
    if dst not in fs.nodes:
        ctx.may_change(parent_of(dst))
        fs.put(dst, Node(DIR, fs.nodes[src].mode, mtime=ctx.world.clock))
    for name in sorted(fs.names(src), key=lambda n: fs.nodes[join(src, n)].inode):
        child = fs.nodes[join(src, name)]
        if child.kind == DIR:
            _copy_tree(ctx, join(src, name), join(dst, name))
        else:
            old = fs.nodes.get(join(dst, name))
            if old is not None and old.kind == DIR:
                raise Unanswerable("a file copied onto a directory")
            ctx.may_change(dst)
            fs.put(join(dst, name), replace(child, order=0, inode=0, owner=sandbox.USER, mtime=ctx.world.clock))
