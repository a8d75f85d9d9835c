"""coreutils' ls as it prints to a pipe (the channel is not a terminal): one name a line,
or `-l`'s long lines (mode, links, owner, group, size, date, name; tmpfs sizes), `-a`,
`-A`, `-d`, `-1`. Names sort by code point (LANG=C.UTF-8)."""

from __future__ import annotations

import time

from backends.world_state.shell import sandbox
from backends.world_state.shell.commands.base import Context, options, quote_always
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR, FILE, FileSystem, Node, join, parent_of

_SIX_MONTHS = 365.2425 * 24 * 3600 / 2


def ls(ctx: Context, args: list[str]) -> int:
    flags, operands = options(args, "aAl1d", program="ls")
    code = 0
    files: list[tuple[str, str]] = []  # (operand, path)
    dirs: list[tuple[str, str]] = []
    for operand in operands or ["."]:
        node = ctx.lookup(operand)
        if node is None:
            ctx.err(f"ls: cannot access {quote_always(operand)}: {ctx.missing(operand)}\n")
            code = 2
        elif node.kind is None:
            raise Unanswerable(f"whether {operand} is a directory is not known")
        elif node.kind == DIR and "d" not in flags:
            dirs.append((operand, ctx.path(operand)))
        else:
            files.append((operand, ctx.path(operand)))
    fs, long = ctx.world.fs, "l" in flags
    blocks: list[str] = []
    if files:
        rows = [(operand, path, fs.nodes[path]) for operand, path in sorted(files)]
        # ls sizes the columns of the operands' own lines by every operand, folders too.
        every = rows + [(operand, path, fs.nodes[path]) for operand, path in dirs]
        blocks.append(_long(ctx, rows, every) if long else "".join(f"{operand}\n" for operand, _, _ in rows))
    for operand, path in sorted(dirs):
        names = _entries(fs, path, flags)
        if long:
            rows = [(name, _entry_path(path, name), _entry_node(fs, path, name)) for name in names]
            body = f"total {sum(_blocks(fs, p, n) for _, p, n in rows)}\n" + _long(ctx, rows)
        else:
            body = "".join(f"{name}\n" for name in names)
        header = f"{operand}:\n" if len(operands) > 1 else ""
        blocks.append(header + body)
    ctx.out("\n".join(blocks))
    return code


def _entries(fs: FileSystem, path: str, flags: dict[str, str]) -> list[str]:
    names = fs.names(path, hidden="a" in flags or "A" in flags)
    if "a" in flags:
        names = [".", "..", *names]
    elif "A" not in flags:
        names = [n for n in names if not n.startswith(".")]
    return sorted(names)


def _entry_path(directory: str, name: str) -> str:
    if name == ".":
        return directory
    if name == "..":
        return parent_of(directory)
    return join(directory, name)


def _entry_node(fs: FileSystem, directory: str, name: str) -> Node:
    node = fs.nodes[_entry_path(directory, name)]
    if node.kind is None:
        raise Unanswerable(f"whether {name} is a directory is not known")
    return node


def _long(ctx: Context, rows: list[tuple[str, str, Node]], sized_by: list[tuple[str, str, Node]] | None = None) -> str:
    cells = [_cells(ctx, row) for row in rows]
    measured = cells if sized_by is None else [_cells(ctx, row) for row in sized_by]
    if not cells:
        return ""
    widths = [max(len(cell[i]) for cell in measured) for i in range(5)]
    return "".join(
        f"{m} {links:>{widths[1]}} {owner:<{widths[2]}} {group:<{widths[3]}} {size:>{widths[4]}} {date} {name}\n"
        for m, links, owner, group, size, date, name in cells
    )


def _cells(ctx: Context, row: tuple[str, str, Node]) -> tuple[str, ...]:
    name, path, node = row
    if node.kind is None or not node.owner:
        raise Unanswerable(f"what {name} is, or whose, is not known")
    links, size = _links_and_size(ctx, ctx.world.fs, path, node)
    return (mode_string(node), str(links), node.owner, node.owner, str(size), _date(node.mtime, ctx.world.clock), name)


def _links_and_size(ctx: Context, fs: FileSystem, path: str, node: Node) -> tuple[int, int]:
    if node.fixed is not None:
        return node.fixed[0], node.fixed[1]
    if node.kind == FILE:
        return 1, len(ctx.read(path).encode("utf-8", "surrogateescape"))
    names = fs.names(path)
    subdirs = 0
    for name in names:
        child = fs.nodes[join(path, name)]
        if child.kind is None:
            raise Unanswerable(f"whether {join(path, name)} is a directory is not known")
        subdirs += child.kind == DIR
    return 2 + subdirs, sandbox.TMPFS_DIR_BASE + sandbox.TMPFS_DIR_ENTRY * len(names)


def _blocks(fs: FileSystem, path: str, node: Node) -> int:
    """KiB allocated, as `total` adds them: whole tmpfs pages for a file, none for a
    tmpfs directory."""
    if node.fixed is not None:
        return node.fixed[2]
    if node.kind == DIR:
        return 0
    size = len(fs.content(path).encode("utf-8", "surrogateescape"))
    return -(-size // sandbox.TMPFS_PAGE) * (sandbox.TMPFS_PAGE // 1024)


def mode_string(node: Node) -> str:
    mode = node.mode
    chars = ["d" if node.kind == DIR else "-"]
    for shift, special, letter in ((6, 0o4000, "s"), (3, 0o2000, "s"), (0, 0o1000, "t")):
        bits = mode >> shift & 7
        chars.append("r" if bits & 4 else "-")
        chars.append("w" if bits & 2 else "-")
        execute = bool(bits & 1)
        if mode & special:
            chars.append(letter if execute else letter.upper())
        else:
            chars.append("x" if execute else "-")
    return "".join(chars)


def _date(mtime: float, now: float) -> str:
    """ls's date: month, day and time within the last six months, else the year (UTC)."""
    stamp = time.gmtime(mtime)
    day = f"{time.strftime('%b', stamp)} {stamp.tm_mday:>2}"
    if now - _SIX_MONTHS < mtime <= now:
        return f"{day} {time.strftime('%H:%M', stamp)}"
    return f"{day}  {stamp.tm_year}"
