"""The virtual filesystem: what it knows, what it knows is absent, what it cannot tell."""

from __future__ import annotations

import pytest

from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR, FILE, FileSystem, Node, normalize


def tree() -> FileSystem:
    fs = FileSystem()
    fs.put("/", Node(DIR, 0o755, complete=False))
    fs.put("/w", Node(DIR, 0o755))
    fs.put("/w/a.txt", Node(FILE, content="a\n"))
    fs.put("/w/d", Node(DIR))
    fs.put("/w/d/b.txt", Node(FILE, content=None))
    return fs


@pytest.mark.parametrize(
    ("path", "cwd", "expected"),
    [
        ("a", "/w", "/w/a"),
        ("./a/../b", "/w", "/w/b"),
        ("/x//y/", "/w", "/x/y"),
        ("..", "/", "/"),
        ("../..", "/w/d", "/"),
    ],
)
def test_paths_are_made_absolute_and_resolved_lexically(path, cwd, expected):
    assert normalize(path, cwd) == expected


def test_a_name_missing_from_a_complete_directory_does_not_exist():
    fs = tree()
    assert fs.lookup("/w/a.txt").kind == FILE
    assert fs.lookup("/w/nope") is None
    assert fs.lookup("/w/nope/deeper") is None
    assert fs.missing_reason("/w/nope/deeper") == "No such file or directory"


def test_a_path_through_a_file_is_not_a_directory():
    fs = tree()
    assert fs.lookup("/w/a.txt/x") is None
    assert fs.missing_reason("/w/a.txt/x") == "Not a directory"


def test_what_an_incomplete_directory_lacks_is_unknown_not_absent():
    fs = tree()
    with pytest.raises(Unanswerable):
        fs.lookup("/etc/passwd")
    with pytest.raises(Unanswerable):
        fs.names("/")


def test_unknown_content_cannot_be_read():
    fs = tree()
    assert fs.content("/w/a.txt") == "a\n"
    with pytest.raises(Unanswerable):
        fs.content("/w/d/b.txt")


def test_names_are_listed_newest_first_and_a_rename_counts_as_new():
    fs = tree()
    fs.put("/w/z.txt", Node(FILE, content=""))
    assert fs.names("/w") == ["z.txt", "d", "a.txt"]
    fs.renew("/w/a.txt")
    assert fs.names("/w") == ["a.txt", "z.txt", "d"]


def test_replacing_a_node_keeps_its_place_and_inode():
    fs = tree()
    before = fs.nodes["/w/a.txt"]
    fs.put("/w/a.txt", Node(FILE, content="new\n"))
    after = fs.nodes["/w/a.txt"]
    assert (after.order, after.inode, after.content) == (before.order, before.inode, "new\n")


def test_removing_a_directory_removes_what_is_below_it():
    fs = tree()
    fs.remove("/w/d")
    assert "/w/d/b.txt" not in fs.nodes
    assert fs.names("/w") == ["a.txt"]


def test_forgetting_a_path_makes_even_its_existence_unknown():
    fs = tree()
    fs.forget("/w/d")
    assert "/w/d/b.txt" not in fs.nodes and "/w/d" not in fs.nodes
    with pytest.raises(Unanswerable):
        fs.lookup("/w/d")
    assert fs.lookup("/w/a.txt").kind == FILE  # what the folder held besides stays known


def test_forgetting_entries_keeps_the_folder_and_forgetting_content_keeps_the_file():
    fs = tree()
    fs.forget_entries("/w/d")
    assert fs.nodes["/w/d"].kind == DIR and not fs.nodes["/w/d"].complete
    assert "/w/d/b.txt" not in fs.nodes
    fs.forget_content("/w/a.txt")
    assert fs.nodes["/w/a.txt"].content is None


def test_a_copy_is_independent():
    fs = tree()
    copy = fs.copy()
    copy.remove("/w/a.txt")
    assert "/w/a.txt" in fs.nodes
    assert fs.names("/w") == ["d", "a.txt"]
