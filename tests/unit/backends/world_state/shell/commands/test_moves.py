"""mv and cp: renames, moves into folders, copies (recursive ones too) and their errors."""

from __future__ import annotations

import pytest
from kit.shell_world import make_world, out, sh

from backends.world_state.shell.filesystem import FILE, Node


@pytest.fixture
def world():
    return make_world({"a.txt": "a\n", "b.txt": "b\n", "d/x.txt": "x\n"})


def test_mv_renames_and_moves_into_a_folder(world):
    assert out(world, "mv a.txt c.txt && cat c.txt && ls") == "a\nb.txt\nc.txt\nd\n"
    assert out(world, "mv c.txt b.txt d/ && ls d") == "b.txt\nc.txt\nx.txt\n"
    assert out(world, "mv d e && ls e") == "b.txt\nc.txt\nx.txt\n"


def test_mv_errors(world):
    assert sh(world, "mv ghost x") == ("mv: cannot stat 'ghost': No such file or directory\n", 1)
    assert sh(world, "mv a.txt a.txt") == ("mv: 'a.txt' and 'a.txt' are the same file\n", 1)
    assert sh(world, "mv d a.txt") == ("mv: cannot overwrite non-directory 'a.txt' with directory 'd'\n", 1)
    assert sh(world, "mv a.txt nodir/") == ("mv: cannot move 'a.txt' to 'nodir/': Not a directory\n", 1)
    assert sh(world, "mv a.txt nodir/x") == ("mv: cannot move 'a.txt' to 'nodir/x': No such file or directory\n", 1)
    assert sh(world, "mv a.txt b.txt c") == ("mv: target 'c': No such file or directory\n", 1)
    assert sh(world, "cp a.txt d/x.txt b.txt") == ("cp: target 'b.txt': Not a directory\n", 1)
    assert sh(world, "mv") == ("mv: missing file operand\nTry 'mv --help' for more information.\n", 1)
    assert sh(world, "mv a.txt") == (
        "mv: missing destination file operand after 'a.txt'\nTry 'mv --help' for more information.\n",
        1,
    )


def test_cp_copies_files_and_with_r_folders(world):
    assert out(world, "cp a.txt c.txt && cat c.txt") == "a\n"
    assert out(world, "cp a.txt b.txt d && ls d") == "a.txt\nb.txt\nx.txt\n"
    # cp -r copies in inode order (x.txt, then the copies made just now), and the copy
    # lists its newest entry first.
    assert out(world, "cp -r d e && find e") == "e\ne/b.txt\ne/a.txt\ne/x.txt\n"


def test_cp_errors(world):
    assert sh(world, "cp d copy") == ("cp: -r not specified; omitting directory 'd'\n", 1)
    assert sh(world, "cp nope x") == ("cp: cannot stat 'nope': No such file or directory\n", 1)
    assert sh(world, "cp a.txt a.txt") == ("cp: 'a.txt' and 'a.txt' are the same file\n", 1)
    assert sh(world, "cp a.txt nodir/") == ("cp: cannot create regular file 'nodir/': Not a directory\n", 1)


def test_a_copy_of_invented_content_is_invented(world):
    world.fs.put("/workspace/a.txt", Node(FILE, content="made up\n", invented=True))
    out(world, "cp a.txt c.txt")
    assert world.fs.nodes["/workspace/c.txt"].invented
