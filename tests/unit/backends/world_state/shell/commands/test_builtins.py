"""echo, cd, pwd, export, unset, true, false: as bash prints them in the sandbox."""

from __future__ import annotations

import pytest
from kit.shell_world import make_world, out, sh, unanswered


@pytest.fixture
def world():
    return make_world({"notes.txt": "n\n", "src/main.py": ""})


def test_echo(world):
    assert out(world, 'echo "a  b"   c') == "a  b c\n"
    assert sh(world, "echo -n hi") == ("hi", 0)
    assert out(world, "echo -e 'a\\tb\\x41' -x") == "a\tbA -x\n"
    assert out(world, "echo -e 'x\\cy'; echo done") == "xdone\n"
    assert out(world, "echo 'single \\n' -E") == "single \\n -E\n"


def test_cd_pwd_and_the_previous_directory(world):
    assert sh(world, "cd -") == ("main: line 2: cd: OLDPWD not set\n", 1)
    assert sh(world, "cd src; pwd; cd ..; pwd; cd -") == ("/workspace/src\n/workspace\n/workspace/src\n", 0)
    assert world.env["OLDPWD"] == "/workspace" and world.env["PWD"] == "/workspace/src"
    assert sh(world, "cd; pwd; cd /; pwd") == ("/home/agent\n/\n", 0)


def test_cd_errors(world):
    assert sh(world, "cd nope") == ("main: line 2: cd: nope: No such file or directory\n", 1)
    assert sh(world, "cd notes.txt") == ("main: line 2: cd: notes.txt: Not a directory\n", 1)
    assert sh(world, "cd a b") == ("main: line 2: cd: too many arguments\n", 1)
    assert world.cwd == "/workspace"


def test_export_unset_and_assignments(world):
    assert out(world, 'export A=1 B="two words"; echo "$A-$B"') == "1-two words\n"
    assert sh(world, "export 1x=2") == ("main: line 2: export: `1x=2': not a valid identifier\n", 1)
    assert out(world, 'X=5; echo $X; unset X; echo "[$X]"') == "5\n[]\n"
    assert unanswered(world, "export")
    assert unanswered(world, "export -n A")


def test_true_false_and_the_colon(world):
    assert sh(world, "true") == ("", 0)
    assert sh(world, "false") == ("", 1)
    assert sh(world, ": anything") == ("", 0)
