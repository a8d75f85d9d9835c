"""Beyond 256 KB of contents or 1,000 paths, names stay and contents become unknown."""

from __future__ import annotations

from kit.shell_world import make_world, sh, unanswered

from backends.world_state.shell import caps
from backends.world_state.shell.filesystem import FILE, Node


def test_contents_past_the_byte_cap_are_dropped_largest_first():
    world = make_world({"small.txt": "s\n"})
    world.fs.put("/workspace/big.txt", Node(FILE, content="x" * caps.MAX_CONTENT_BYTES))
    sh(world, "echo more > more.txt")  # the write that passes the cap
    assert world.fs.nodes["/workspace/big.txt"].content is None
    assert sh(world, "cat more.txt small.txt") == ("more\ns\n", 0)
    assert sh(world, "ls") == ("big.txt\nmore.txt\nsmall.txt\n", 0)  # names kept
    assert unanswered(world, "cat big.txt")  # the model is asked


def test_contents_of_paths_past_the_path_cap_are_dropped_and_names_are_bounded():
    world = make_world()
    for i in range(caps.MAX_PATHS + 10):
        sh(world, f"echo {i} > f{i}.txt")
    assert len(world.fs.nodes) > caps.MAX_PATHS
    known = sum(node.content is not None for node in world.fs.nodes.values())
    assert known <= caps.MAX_PATHS
    assert unanswered(world, f"cat f{caps.MAX_PATHS + 5}.txt")
    assert sh(world, "cat f0.txt") == ("0\n", 0)


def test_names_stop_at_their_own_cap_and_the_folder_becomes_unknown():
    world = make_world()
    for i in range(caps.MAX_NAMES + 5):
        world.fs.put(f"/workspace/n{i}", Node(FILE, content=""))
    caps.enforce(world.fs)
    assert len(world.fs.nodes) <= caps.MAX_NAMES
    assert unanswered(world, "ls")
