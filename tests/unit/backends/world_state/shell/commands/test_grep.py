"""grep: line selection, its options, names and numbers, exit codes."""

from __future__ import annotations

import pytest
from kit.shell_world import make_world, out, sh, unanswered


@pytest.fixture
def world():
    return make_world(
        {"n.txt": "alpha\nbeta\ngamma\n", "d.csv": "id,name\n1,Alice\n2,bob\n", "nonl.txt": "no nl", "sub/x": ""}
    )


def test_selection_and_exit_codes(world):
    assert sh(world, "grep a n.txt") == ("alpha\nbeta\ngamma\n", 0)
    assert sh(world, "grep zzz n.txt") == ("", 1)
    assert sh(world, "grep nl nonl.txt") == ("no nl\n", 0)
    assert sh(world, "grep x nope") == ("grep: nope: No such file or directory\n", 2)
    assert sh(world, "grep x sub") == ("grep: sub: Is a directory\n", 2)
    assert sh(world, "grep alpha nope n.txt") == ("grep: nope: No such file or directory\nn.txt:alpha\n", 2)


def test_options(world):
    assert out(world, "grep -n ta n.txt") == "2:beta\n"
    assert out(world, "grep -c a n.txt d.csv") == "n.txt:3\nd.csv:1\n"
    assert out(world, "grep -v beta n.txt") == "alpha\ngamma\n"
    assert out(world, "grep -i ALICE d.csv") == "1,Alice\n"
    assert out(world, "grep -l a n.txt d.csv nonl.txt") == "n.txt\nd.csv\n"
    assert out(world, "grep -h a n.txt d.csv") == "alpha\nbeta\ngamma\nid,name\n"
    assert out(world, "grep -H beta n.txt") == "n.txt:beta\n"
    assert out(world, "grep -x beta n.txt; grep -w bob d.csv") == "beta\n2,bob\n"
    assert sh(world, "grep -q beta n.txt") == ("", 0)
    assert out(world, "grep -F 'a.' n.txt; grep -e gamma n.txt") == "gamma\n"
    assert sh(world, "grep -s x nope") == ("", 2)


def test_patterns(world):
    assert out(world, "grep '^[bg]' n.txt") == "beta\ngamma\n"
    assert out(world, "grep 'a\\(l\\|m\\)' n.txt") == "alpha\ngamma\n"
    assert out(world, "grep -E 'al|ga' n.txt") == "alpha\ngamma\n"
    assert out(world, "grep 'm\\{2\\}' n.txt") == "gamma\n"
    assert out(world, "grep '[[:digit:]],[[:upper:]]' d.csv") == "1,Alice\n"
    assert out(world, "echo 'a+b' | grep 'a+b'; echo aab | grep 'a\\+b'") == "a+b\naab\n"


def test_the_input(world):
    assert out(world, "cat n.txt | grep -c a") == "3\n"
    assert out(world, "grep -n a - < n.txt") == "1:alpha\n2:beta\n3:gamma\n"


def test_what_grep_leaves_to_the_model(world):
    assert unanswered(world, "grep -r a .")
    assert unanswered(world, "grep -o a n.txt")
    assert unanswered(world, "grep '[[=a=]]' n.txt")
