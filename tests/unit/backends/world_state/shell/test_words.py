"""Words made into arguments: variables, splitting, tilde, patterns."""

from __future__ import annotations

import pytest
from kit.shell_world import make_world, out, unanswered


@pytest.fixture
def world():
    return make_world({"a.txt": "", "b.txt": "", ".hidden.txt": "", "c.md": "", "d/e.txt": ""})


def test_unquoted_variables_split_and_quoted_ones_do_not(world):
    out(world, "X='a  b'")
    assert out(world, 'echo $X "$X" pre$X"post"') == "a b a  b prea bpost\n"


def test_unset_variables_are_empty_and_unknown_ones_unanswerable(world):
    assert out(world, 'echo "[$NOPE]" $NOPE.') == "[] .\n"
    world.env["LATER"] = None
    assert unanswered(world, "echo $LATER")


def test_tilde(world):
    assert out(world, "echo ~ ~/x '~' a~") == "/home/agent /home/agent/x ~ a~\n"


def test_patterns_expand_sorted_without_hidden_names_and_stay_when_nothing_matches(world):
    assert out(world, "echo *.txt") == "a.txt b.txt\n"
    assert out(world, "echo .*.txt") == ".hidden.txt\n"
    assert out(world, "echo */*.txt d/?.txt") == "d/e.txt d/e.txt\n"
    assert out(world, "echo *.none '*.txt' \\*.txt") == "*.none *.txt *.txt\n"
    assert out(world, "echo */") == "d/\n"


def test_a_pattern_in_a_folder_the_state_cannot_list_is_unanswerable(world):
    assert unanswered(world, "echo /etc/*.conf")
