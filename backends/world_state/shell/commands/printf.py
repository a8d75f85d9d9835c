"""bash's printf builtin: the format's escapes and conversions (%s %b %c %d %i %u %o %x
%X %f %e %g %%, with flags, width and precision), reused while arguments remain."""

from __future__ import annotations

import re

from backends.world_state.shell.commands.base import Context
from backends.world_state.shell.commands.escapes import backslash_escapes
from backends.world_state.shell.errors import Unanswerable

_SPEC = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d*))?([a-zA-Z%])")
_INTEGER = re.compile(r"\s*([-+]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)\s*")


def printf(ctx: Context, args: list[str]) -> int:
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        ctx.err("printf: usage: printf [-v var] format [arguments]\n")
        return 2
    if args[0].startswith("-") and len(args[0]) > 1:
        raise Unanswerable(f"printf {args[0]} is not answered from state")
    form, values = args[0], args[1:]
    code = 0
    while True:
        used, stop, failed = _once(ctx, form, values)
        code = 1 if failed else code
        values = values[used:]
        if stop or not used or not values:
            break
    return code


def _once(ctx: Context, form: str, values: list[str]) -> tuple[int, bool, bool]:
    """One pass of the format: (arguments used, whether \\c stopped it, whether a number
    was invalid). Output goes out as it is made: bash reports an invalid number between
    what came before it and the 0 it prints for it."""
    used = 0
    failed = False
    position = 0
    for match in _SPEC.finditer(form):
        literal, stop = backslash_escapes(form[position : match.start()], echo=False)
        ctx.out(literal)
        if stop:
            return used, True, failed
        position = match.end()
        flags, width, precision, conversion = match.groups()
        if conversion == "%":
            ctx.out("%")
            continue
        value = values[used] if used < len(values) else None
        used += value is not None
        spec = f"%{flags}{width}" + (f".{precision}" if precision is not None else "")
        if conversion == "c":
            ctx.out((spec + "s") % ((value or "")[:1] or "\0"))  # no character: bash writes a NUL
        elif conversion == "s":
            ctx.out((spec + "s") % (value or ""))
        elif conversion == "b":
            text, stop = backslash_escapes(value or "", echo=True)
            ctx.out((spec + "s") % text)
            if stop:
                return used, True, failed
        elif conversion in "diouxX":
            number, ok = _integer(ctx, value)
            failed = failed or not ok
            if conversion == "u" and number < 0:
                number += 1 << 64
            ctx.out((spec + ("d" if conversion in "diu" else conversion)) % number)
        elif conversion in "feEgG":
            ctx.out((spec + conversion) % _float(value))
        else:
            raise Unanswerable(f"printf %{conversion} is not answered from state")
    literal, stop = backslash_escapes(form[position:], echo=False)
    ctx.out(literal)
    if "%" in literal.replace("%%", ""):
        raise Unanswerable("a printf format bash reads differently")
    return used, stop, failed


def _integer(ctx: Context, value: str | None) -> tuple[int, bool]:
    if value is None or value == "":
        return 0, True
    if value[0] in "'\"" and len(value) > 1:
        return ord(value[1]), True
    match = _INTEGER.fullmatch(value)
    if match is None:
        if re.match(r"\s*[-+]?\d", value):
            raise Unanswerable("a partly numeric printf argument")
        ctx.bash_error(f"printf: {value}: invalid number")
        return 0, False
    sign, digits = match.groups()
    number = (
        int(digits, 16) if digits[:2].lower() == "0x" else int(digits, 8) if digits.startswith("0") else int(digits)
    )
    return -number if sign == "-" else number, True


def _float(value: str | None) -> float:
    if not value:
        return 0.0
    try:
        return float(value)
    except ValueError as exc:
        raise Unanswerable("a non-numeric printf float argument") from exc
