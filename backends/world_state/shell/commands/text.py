"""coreutils' wc, head and tail over files or the input."""

from __future__ import annotations

import re
from dataclasses import dataclass

from backends.world_state.shell.commands.base import Context, options, quote_always, quote_if_needed, split_lines
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR

_COUNT = re.compile(r"[-+]?\d+")


@dataclass(slots=True)
class _Input:
    label: str  # the operand, or "-"
    text: str | None  # None: it could not be opened
    regular: bool  # a regular file (wc sizes its columns by regular files' sizes)
    is_dir: bool = False


def _inputs(ctx: Context, operands: list[str], program: str) -> list[_Input]:
    found = []
    for operand in operands or ["-"]:
        if operand == "-":
            text = ctx.stdin()
            if text is None:
                raise Unanswerable(f"{program} of input the state does not know")
            found.append(_Input("-", text, ctx.stdin_size is not None))
            continue
        node = ctx.lookup(operand)
        if node is None:
            found.append(_Input(operand, None, False))
        elif node.kind is None:
            raise Unanswerable(f"whether {operand} is a file is not known")
        elif node.kind == DIR:
            found.append(_Input(operand, "", False, is_dir=True))
        else:
            found.append(_Input(operand, ctx.read(ctx.path(operand)), True))
    return found


def wc(ctx: Context, args: list[str]) -> int:
    flags, operands = options(args, "lwcm", program="wc")
    shown = [f for f in "lwmc" if f in flags] or ["l", "w", "c"]
    inputs = _inputs(ctx, operands, "wc")
    width = _width(ctx, inputs, len(shown))
    totals = dict.fromkeys(shown, 0)
    code = 0
    for item in inputs:
        if item.text is None:
            ctx.err(f"wc: {quote_if_needed(item.label)}: {ctx.missing(item.label)}\n")
            code = 1
            continue
        counts = _counts(item.text)
        line = " ".join(f"{counts[f]:>{width}}" for f in shown)
        ctx.out(line + ("" if item.label == "-" and not operands else f" {item.label}") + "\n")
        for f in shown:
            totals[f] += counts[f]
        if item.is_dir:
            ctx.err(f"wc: {quote_if_needed(item.label)}: Is a directory\n")
            code = 1
    if len(inputs) > 1:
        ctx.out(" ".join(f"{totals[f]:>{width}}" for f in shown) + " total\n")
    return code


def _counts(text: str) -> dict[str, int]:
    return {
        "l": text.count("\n"),
        "w": len(text.split()),
        "m": len(text),
        "c": len(text.encode("utf-8", "surrogateescape")),
    }


def _width(ctx: Context, inputs: list[_Input], columns: int) -> int:
    """wc's column width: the digits of the regular files' total size, at least 7 when an
    input is not a regular file, and 1 for a single count of a single input."""
    if len(inputs) == 1 and columns == 1:
        return 1
    minimum, total = 1, 0
    for item in inputs:
        if item.text is None:
            continue
        if not item.regular:
            minimum = 7
        elif item.label == "-":
            total += ctx.stdin_size or 0
        else:
            total += len(item.text.encode("utf-8", "surrogateescape"))
    return max(minimum, len(str(total)))


def head(ctx: Context, args: list[str]) -> int:
    return _ends(ctx, "head", args)


def tail(ctx: Context, args: list[str]) -> int:
    return _ends(ctx, "tail", args)


def _ends(ctx: Context, program: str, args: list[str]) -> int:
    if args and re.fullmatch(r"-\d+", args[0]):
        if program == "tail" and len(args) > 2:
            raise Unanswerable("tail's old -N spelling with several files")
        args = [f"-n{args[0][1:]}", *args[1:]]  # `head -2`: the old spelling of -n 2
    flags, operands = options(args, "qv", valued="n", program=program)
    spelled = flags.get("n", "10")
    if not _COUNT.fullmatch(spelled):
        raise Unanswerable(f"{program} -n {spelled} is not answered from state")
    count = int(spelled)
    from_start = spelled.startswith("+") and program == "tail"
    all_but = spelled.startswith("-") and program == "head"
    inputs = _inputs(ctx, operands, program)
    headers = ("v" in flags or len(inputs) > 1) and "q" not in flags
    code, first = 0, True
    for item in inputs:
        if item.text is None:
            ctx.err(f"{program}: cannot open {quote_always(item.label)} for reading: {ctx.missing(item.label)}\n")
            code = 1
            continue
        if headers:
            label = "standard input" if item.label == "-" else item.label
            ctx.out(("" if first else "\n") + f"==> {label} <==\n")
            first = False
        if item.is_dir:
            ctx.err(f"{program}: error reading {quote_always(item.label)}: Is a directory\n")
            code = 1
            continue
        lines = split_lines(item.text)
        if program == "head":
            chosen = lines[: len(lines) + count] if all_but else lines[:count]
        elif from_start:
            chosen = lines[max(count - 1, 0) :]
        else:
            chosen = lines[max(len(lines) - abs(count), 0) :] if count else []
        ctx.out("".join(chosen))
    return code
