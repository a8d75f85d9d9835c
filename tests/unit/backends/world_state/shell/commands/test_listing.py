"""ls to a pipe: one name a line, -a/-A/-d/-1, and -l's long lines with tmpfs sizes."""

from __future__ import annotations

import pytest
from kit.shell_world import make_world, out, sh, unanswered

from backends.world_state.shell.commands.listing import mode_string
from backends.world_state.shell.filesystem import DIR, FILE, Node


@pytest.fixture
def world():
    return make_world({"b.txt": "bb\n", "a.txt": "a\n", ".hidden": "", "Z.md": "", "d/x": "x" * 5000})


def test_names_one_a_line_in_code_point_order(world):
    assert out(world, "ls") == "Z.md\na.txt\nb.txt\nd\n"
    assert out(world, "ls -a") == ".\n..\n.hidden\nZ.md\na.txt\nb.txt\nd\n"
    assert out(world, "ls -A1") == ".hidden\nZ.md\na.txt\nb.txt\nd\n"
    assert out(world, "ls d") == "x\n"
    assert out(world, "ls -d d") == "d\n"


def test_several_operands_errors_first_then_files_then_folders(world):
    assert sh(world, "ls nope d b.txt a.txt") == (
        "ls: cannot access 'nope': No such file or directory\na.txt\nb.txt\n\nd:\nx\n",
        2,
    )
    assert sh(world, "ls nope d") == ("ls: cannot access 'nope': No such file or directory\nd:\nx\n", 2)


def test_long_format(world):
    # Checked against the sandbox: tmpfs folders are 40 bytes plus 20 an entry and count
    # no blocks; a file takes whole 4 KiB pages; `..` of /workspace is the image's root.
    date = "Jan 15 08:00"
    assert out(world, "ls -l") == (
        "total 8\n"
        f"-rw-r--r-- 1 agent agent  0 {date} Z.md\n"
        f"-rw-r--r-- 1 agent agent  2 {date} a.txt\n"
        f"-rw-r--r-- 1 agent agent  3 {date} b.txt\n"
        f"drwxr-xr-x 2 agent agent 60 {date} d\n"
    )
    assert out(world, "ls -la").splitlines()[:3] == [
        "total 12",
        f"drwxr-xr-x  3 agent agent  140 {date} .",
        f"drwxr-xr-x 18 root  root  4096 {date} ..",
    ]


def test_long_format_sizes_the_operands_columns_by_every_operand(world):
    out(world, "mkdir -p d/e")
    assert out(world, "ls -l a.txt d") == (
        "-rw-r--r-- 1 agent agent  2 Jan 15 08:00 a.txt\n\nd:\ntotal 8\ndrwxr-xr-x 2 agent agent   40 Jan 15 08:00 "
        "e\n-rw-r--r-- 1 agent agent 5000 Jan 15 08:00 x\n"
    )


def test_dates_older_than_six_months_show_the_year():
    world = make_world({"old.txt": ""})
    world.clock += 200 * 24 * 3600
    assert out(world, "ls -l old.txt") == "-rw-r--r-- 1 agent agent 0 Jan 15  2027 old.txt\n"


def test_mode_strings():
    assert mode_string(Node(DIR, 0o1777)) == "drwxrwxrwt"
    assert mode_string(Node(FILE, 0o4755)) == "-rwsr-xr-x"
    assert mode_string(Node(FILE, 0o600)) == "-rw-------"


def test_what_ls_leaves_to_the_model(world):
    assert unanswered(world, "ls -R")
    assert unanswered(world, "ls -la /tmp")  # the channel's own file there, its size unknown
    assert unanswered(world, "ls /usr")
    world.fs.put("/workspace/seen", Node(None))
    assert unanswered(world, "ls -l")  # a name seen in a listing, its kind unknown
    assert out(world, "ls") == "Z.md\na.txt\nb.txt\nd\nseen\n"
