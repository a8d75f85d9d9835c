"""POSIX basic and extended patterns in Python's terms."""

from __future__ import annotations

import re

import pytest

from backends.world_state.shell.commands.regex import translate
from backends.world_state.shell.errors import Unanswerable


@pytest.mark.parametrize(
    ("pattern", "extended", "matches", "misses"),
    [
        ("a.c", False, ["abc", "xa-cx"], ["ac"]),
        ("^ab*$", False, ["a", "abbb"], ["cab"]),
        ("*a", False, ["*a"], ["a"]),
        ("a\\{2\\}", False, ["aa"], ["a"]),
        ("a{2}", False, ["a{2}"], ["aa"]),
        ("a{2}", True, ["aa"], ["a{2}"]),
        ("(x)|y", False, ["(x)|y"], ["x"]),
        ("(x)|y", True, ["x", "y"], ["z"]),
        ("a\\|b", False, ["b"], ["c"]),
        ("[]x]", False, ["]", "x"], ["y"]),
        ("[^0-9]", False, ["a"], ["5"]),
        ("[[:space:]]", False, ["a b"], ["ab"]),
        ("a$b", False, ["a$b"], ["ab"]),
        ("x^", False, ["x^"], ["x"]),
        ("\\<is\\>", False, ["it is"], ["this"]),
        ("\\(a\\)\\1", False, ["aa"], ["ab"]),
    ],
)
def test_translation(pattern, extended, matches, misses):
    compiled = re.compile(translate(pattern, extended=extended))
    assert all(compiled.search(text) for text in matches)
    assert not any(compiled.search(text) for text in misses)


@pytest.mark.parametrize("pattern", ["[[=a=]]", "[[.a.]]", "[[:nope:]]", "a\\", "[abc", "\\q"])
def test_what_is_left_to_the_model(pattern):
    with pytest.raises(Unanswerable):
        translate(pattern, extended=False)
