"""wc, head and tail: counts and coreutils' column widths, line selections, headers."""

from __future__ import annotations

import pytest
from kit.shell_world import make_world, out, sh, unanswered


@pytest.fixture
def world():
    return make_world(
        {"n.txt": "a\nb\nc\nd\n", "w.txt": "one two\n", "nonl.txt": "no nl", "uni.txt": "café\n", "d/x": ""}
    )


def test_wc_counts_and_widths(world):
    assert out(world, "wc w.txt") == "1 2 8 w.txt\n"
    assert out(world, "wc -l w.txt; wc -w w.txt; wc -c w.txt; wc -lw w.txt") == "1 w.txt\n2 w.txt\n8 w.txt\n1 2 w.txt\n"
    assert out(world, "wc -l w.txt n.txt") == " 1 w.txt\n 4 n.txt\n 5 total\n"
    assert out(world, "wc nonl.txt; wc -m uni.txt; wc -c uni.txt") == "0 2 5 nonl.txt\n5 uni.txt\n6 uni.txt\n"


def test_wc_of_the_input(world):
    assert out(world, "echo hi | wc") == "      1       1       3\n"
    assert out(world, "echo hi | wc -l") == "1\n"
    assert out(world, "wc < w.txt") == "1 2 8\n"
    assert out(world, "printf '' | wc") == "      0       0       0\n"


def test_wc_errors(world):
    assert sh(world, "wc nope") == ("wc: nope: No such file or directory\n", 1)
    assert sh(world, "wc missing n.txt") == ("wc: missing: No such file or directory\n4 4 8 n.txt\n4 4 8 total\n", 1)
    assert sh(world, "wc d") == ("      0       0       0 d\nwc: d: Is a directory\n", 1)


def test_head_and_tail(world):
    assert out(world, "head -n 2 n.txt; tail -n 1 n.txt; tail -2 n.txt") == "a\nb\nd\nc\nd\n"
    assert out(world, "tail -n +3 n.txt; head -n -3 n.txt; head -3 n.txt") == "c\nd\na\na\nb\nc\n"
    assert out(world, "tail -n 5 nonl.txt; head nonl.txt") == "no nlno nl"
    assert out(world, "tail -n 0 n.txt") == ""
    assert out(world, "cat n.txt | head -n 1") == "a\n"


def test_headers_with_several_files(world):
    assert out(world, "head -n 1 n.txt w.txt") == "==> n.txt <==\na\n\n==> w.txt <==\none two\n"
    assert sh(world, "head -n 1 nope n.txt") == (
        "head: cannot open 'nope' for reading: No such file or directory\n==> n.txt <==\na\n",
        1,
    )
    assert sh(world, "tail -n 1 nope") == ("tail: cannot open 'nope' for reading: No such file or directory\n", 1)
    assert sh(world, "head d") == ("head: error reading 'd': Is a directory\n", 1)


def test_what_they_leave_to_the_model(world):
    assert unanswered(world, "head -c 3 n.txt")
    assert unanswered(world, "tail -f n.txt")
    assert unanswered(world, "wc -L n.txt")
