"""GNU grep over files or the input: basic (default), extended (-E) or fixed (-F)
patterns; -i -v -c -n -l -q -s -h -H -w -x and -e. Exit code 0 when a line is selected,
1 when none, 2 after an error (unless -q selected a line)."""

from __future__ import annotations

import re
from collections.abc import Callable

from backends.world_state.shell.commands.base import Context, options, split_lines
from backends.world_state.shell.commands.regex import translate
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR


def grep(ctx: Context, args: list[str]) -> int:
    flags, operands = options(args, "ivcnlqshHwxFEG", valued="e", program="grep")
    if "e" in flags:
        pattern = flags["e"]
    elif operands:
        pattern, operands = operands[0], operands[1:]
    else:
        raise Unanswerable("grep without a pattern")
    matcher = _matcher(pattern, flags)
    show_names = ("H" in flags or len(operands) > 1) and "h" not in flags
    selected_any, failed = False, False
    for operand in operands or ["-"]:
        label = "(standard input)" if operand == "-" else operand
        text = _text(ctx, operand, flags)
        if text is None:
            failed = True
            if "c" in flags and "l" not in flags and operand != "-" and _is_dir(ctx, operand):
                ctx.out((f"{label}:" if show_names else "") + "0\n")  # grep counts a folder it cannot read as 0
            continue
        if "\0" in text:
            raise Unanswerable("grep of binary content")
        count = 0
        for number, line in enumerate(split_lines(text), start=1):
            body = line[:-1] if line.endswith("\n") else line
            if bool(matcher(body)) == ("v" in flags):
                continue
            count += 1
            if "q" in flags:
                return 0
            if "l" in flags:
                break
            if "c" not in flags:
                prefix = (f"{label}:" if show_names else "") + (f"{number}:" if "n" in flags else "")
                ctx.out(f"{prefix}{body}\n")
        selected_any = selected_any or count > 0
        if "l" in flags and count:
            ctx.out(f"{label}\n")
        elif "c" in flags and "l" not in flags:
            ctx.out((f"{label}:" if show_names else "") + f"{count}\n")
    return 2 if failed else 0 if selected_any else 1


def _text(ctx: Context, operand: str, flags: dict[str, str]) -> str | None:
    """The operand's text; None (said unless -s) when it cannot be read."""
    if operand == "-":
        text = ctx.stdin()
        if text is None:
            raise Unanswerable("grep of input the state does not know")
        return text
    node = ctx.lookup(operand)
    if node is not None and node.kind is None:
        raise Unanswerable(f"whether {operand} is a file is not known")
    if node is None or node.kind == DIR:
        if "s" not in flags:
            reason = ctx.missing(operand) if node is None else "Is a directory"
            ctx.err(f"grep: {operand}: {reason}\n")  # grep names files as they are, unquoted
        return None
    return ctx.read(ctx.path(operand))


def _is_dir(ctx: Context, operand: str) -> bool:
    node = ctx.lookup(operand)
    return node is not None and node.kind == DIR


def _matcher(pattern: str, flags: dict[str, str]) -> Callable[[str], object]:
    if "\n" in pattern:
        raise Unanswerable("several grep patterns")
    source = re.escape(pattern) if "F" in flags else translate(pattern, extended="E" in flags)
    if "x" in flags:
        source = f"(?:{source})\\Z"
    elif "w" in flags:
        source = rf"(?<!\w)(?:{source})(?!\w)"
    try:
        compiled = re.compile(source, re.IGNORECASE if "i" in flags else 0)
    except re.error as exc:
        raise Unanswerable(f"a pattern Python reads differently: {exc}") from exc
    return compiled.match if "x" in flags else compiled.search
