"""find: starting points, then entries depth first, newest first (tmpfs order)."""

from __future__ import annotations

import pytest
from kit.shell_world import make_world, out, sh, unanswered


@pytest.fixture
def world():
    world = make_world()
    out(world, "touch a b; mkdir d; touch d/x c.txt")
    return world


def test_everything_in_the_order_tmpfs_lists_it(world):
    assert out(world, "find") == ".\n./c.txt\n./d\n./d/x\n./b\n./a\n"
    assert out(world, "mv a e; find .") == ".\n./e\n./c.txt\n./d\n./d/x\n./b\n"


def test_tests(world):
    assert out(world, "find . -name '*.txt'") == "./c.txt\n"
    assert out(world, "find . -type d") == ".\n./d\n"
    assert out(world, "find d -type f -name x") == "d/x\n"
    assert out(world, "find . -maxdepth 1 -type f -iname 'C*'") == "./c.txt\n"
    assert out(world, "find . -name '*'") == ".\n./c.txt\n./d\n./d/x\n./b\n./a\n"


def test_a_missing_starting_point(world):
    assert sh(world, "find nope d") == ("find: \u2018nope\u2019: No such file or directory\nd\nd/x\n", 1)


def test_what_find_leaves_to_the_model(world):
    assert unanswered(world, "find . -newer a")
    assert unanswered(world, "find . -name x -o -name y")
    assert unanswered(world, "find . -delete")
