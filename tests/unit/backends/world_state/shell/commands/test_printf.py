"""bash's printf: escapes, conversions, reuse of the format, invalid numbers."""

from __future__ import annotations

import pytest
from kit.shell_world import make_world, sh, unanswered


@pytest.mark.parametrize(
    ("line", "answer"),
    [
        ("printf '%s-%d\\n' x 5 y", ("x-5\ny-0\n", 0)),
        ("printf '%5s|%-4d|%03d|%x|%%|%c\\n' ab 7 5 255 xyz", ("   ab|7   |005|ff|%|x\n", 0)),
        ("printf 'a\\tb\\\\n'", ("a\tb\\n", 0)),
        ("printf '%s %s\\n' a", ("a \n", 0)),
        ("printf 'x%sy\\n'", ("xy\n", 0)),
        ("printf '%.2s\\n' abcdef", ("ab\n", 0)),
        ("printf '%b\\n' 'a\\nb'", ("a\nb\n", 0)),
        ("printf '%05.1f|%+d|% d\\n' 3.14159 5 7", ("003.1|+5| 7\n", 0)),
        ("printf 'a\\cb'", ("a\\cb", 0)),  # \c stops only %b's argument
        ("printf '%d\\n' abc", ("main: line 2: printf: abc: invalid number\n0\n", 1)),
        ("printf", ("printf: usage: printf [-v var] format [arguments]\n", 2)),
        ("printf '%d %d\\n' 010 0x1f", ("8 31\n", 0)),
        ("printf '%c|' '' x", ("\0|x|", 0)),
    ],
)
def test_printf(line, answer):
    assert sh(make_world(), line) == answer


@pytest.mark.parametrize(
    "line", ["printf -v X hi", "printf '%q' a", "printf '%(%Y)T'", "printf '%*d' 3 4", "printf '%d' 12abc"]
)
def test_what_printf_leaves_to_the_model(line):
    assert unanswered(make_world(), line)
