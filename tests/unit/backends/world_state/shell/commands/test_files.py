"""cat, touch, mkdir, rmdir, rm: contents, errors and their exit codes as coreutils prints them."""

from __future__ import annotations

import pytest
from kit.shell_world import make_world, out, sh, unanswered


@pytest.fixture
def world():
    return make_world(
        {"notes.txt": "alpha\nbeta\n", "nonl.txt": "no newline", "my file.txt": "spaced\n", "src/main.py": "x\n"}
    )


def test_cat(world):
    assert sh(world, "cat notes.txt nonl.txt") == ("alpha\nbeta\nno newline", 0)
    assert sh(world, "cat missing.txt") == ("cat: missing.txt: No such file or directory\n", 1)
    assert sh(world, "cat 'no such'") == ("cat: 'no such': No such file or directory\n", 1)
    assert sh(world, "cat src") == ("cat: src: Is a directory\n", 1)
    assert sh(world, "cat notes.txt/x") == ("cat: notes.txt/x: Not a directory\n", 1)
    assert out(world, "echo in | cat - notes.txt") == "in\nalpha\nbeta\n"
    assert out(world, "cat -n notes.txt nonl.txt") == "     1\talpha\n     2\tbeta\n     3\tno newline"


def test_touch(world):
    assert sh(world, "touch new.txt && cat new.txt && ls") == ("my file.txt\nnew.txt\nnonl.txt\nnotes.txt\nsrc\n", 0)
    assert out(world, "touch notes.txt; cat notes.txt") == "alpha\nbeta\n"
    assert sh(world, "touch nodir/f") == ("touch: cannot touch 'nodir/f': No such file or directory\n", 1)
    assert sh(world, "touch") == ("touch: missing file operand\nTry 'touch --help' for more information.\n", 1)


def test_mkdir(world):
    assert sh(world, "mkdir -p a/b/c && ls a/b") == ("c\n", 0)
    assert sh(world, "mkdir src") == ("mkdir: cannot create directory \u2018src\u2019: File exists\n", 1)
    assert sh(world, "mkdir x/y") == ("mkdir: cannot create directory \u2018x/y\u2019: No such file or directory\n", 1)
    assert sh(world, "mkdir -p src; echo $?") == ("0\n", 0)
    assert sh(world, "mkdir -p notes.txt/x") == (
        "mkdir: cannot create directory \u2018notes.txt\u2019: Not a directory\n",
        1,
    )
    assert sh(world, "mkdir -p notes.txt") == ("mkdir: cannot create directory \u2018notes.txt\u2019: File exists\n", 1)
    assert sh(world, "mkdir") == ("mkdir: missing operand\nTry 'mkdir --help' for more information.\n", 1)


def test_rm(world):
    assert sh(world, "rm notes.txt && cat notes.txt") == ("cat: notes.txt: No such file or directory\n", 1)
    assert sh(world, "rm src") == ("rm: cannot remove 'src': Is a directory\n", 1)
    assert sh(world, "rm nope") == ("rm: cannot remove 'nope': No such file or directory\n", 1)
    assert sh(world, "rm -f nope; echo $?") == ("0\n", 0)
    assert sh(world, "rm -r src && ls") == ("my file.txt\nnonl.txt\n", 0)
    assert sh(world, "rm") == ("rm: missing operand\nTry 'rm --help' for more information.\n", 1)
    assert sh(world, "rm -f") == ("", 0)


def test_rmdir(world):
    assert sh(world, "rmdir src") == ("rmdir: failed to remove 'src': Directory not empty\n", 1)
    assert sh(world, "mkdir e && rmdir e && ls e") == ("ls: cannot access 'e': No such file or directory\n", 2)


def test_what_file_commands_leave_to_the_model(world):
    assert unanswered(world, "rm -r .")
    assert unanswered(world, "rm -i notes.txt")
    assert unanswered(world, "cd src && rm -r /workspace/src")
    assert unanswered(world, "rm /etc/hosts")


def test_names_in_messages_are_quoted_as_coreutils_quotes_them(world):
    assert sh(world, "cat 'p=q' 'a:b' r,s x#y '#z' é") == (
        "cat: 'p=q': No such file or directory\n"
        "cat: 'a:b': No such file or directory\n"
        "cat: r,s: No such file or directory\n"
        "cat: x#y: No such file or directory\n"
        "cat: '#z': No such file or directory\n"
        "cat: é: No such file or directory\n",
        1,
    )
    assert sh(world, "grep x 'a b'") == ("grep: a b: No such file or directory\n", 2)  # grep does not quote
    assert sh(world, "mkdir 'x/a b'") == (
        "mkdir: cannot create directory \u2018x/a b\u2019: No such file or directory\n",
        1,
    )
    assert unanswered(world, 'cat "d\'e"')  # coreutils double-quotes it: left to the model
