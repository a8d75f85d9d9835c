"""test and [: file tests, strings, integers, negation, and bash's error messages."""

from __future__ import annotations

import pytest
from kit.shell_world import make_world, sh, unanswered


@pytest.fixture
def world():
    return make_world({"notes.txt": "n\n", "empty.txt": "", "src/main.py": ""})


@pytest.mark.parametrize(
    ("expression", "code"),
    [
        ("-e notes.txt", 0),
        ("-e ghost", 1),
        ("-f notes.txt", 0),
        ("-f src", 1),
        ("-d src", 0),
        ("-d notes.txt", 1),
        ("-s notes.txt", 0),
        ("-s empty.txt", 1),
        ("-r notes.txt", 0),
        ("-x notes.txt", 1),
        ("-z ''", 0),
        ("-n ''", 1),
        ("abc", 0),
        ("''", 1),
        ("a = a", 0),
        ("a == b", 1),
        ("a != b", 0),
        ("1 -lt 2", 0),
        ("5 -ge 7", 1),
        ("! -e ghost", 0),
        ("! a = a", 1),
    ],
)
def test_expressions(world, expression, code):
    assert sh(world, f"[ {expression} ]") == ("", code)
    assert sh(world, f"test {expression}") == ("", code)


def test_no_arguments_is_false(world):
    assert sh(world, "test; echo $?") == ("1\n", 0)


def test_errors_exit_two_with_bashs_message(world):
    assert sh(world, "test a b c") == ("main: line 2: test: b: binary operator expected\n", 2)
    assert sh(world, "[ x -eq 1 ]") == ("main: line 2: [: x: integer expression expected\n", 2)
    assert sh(world, "test -q a") == ("main: line 2: test: -q: unary operator expected\n", 2)
    assert sh(world, "test a ]") == ("main: line 2: test: a: unary operator expected\n", 2)


def test_what_test_leaves_to_the_model(world):
    assert unanswered(world, "[ a -a b -o c ]")
    assert unanswered(world, "[ notes.txt -nt src ]")
    assert unanswered(world, "[ -f /etc/passwd ]")
