"""The shell world state: a fresh sandbox, an episode's seed, JSON both ways."""

from __future__ import annotations

import json

import pytest
from kit.shell_world import CLOCK, make_world

from backends.world_state.shell import ShellWorld, new_world, seed_files
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR, FILE


def test_a_fresh_sandbox_has_an_empty_workspace_and_unknown_image_folders():
    world = new_world()
    assert world.cwd == "/workspace"
    assert world.env["HOME"] == "/home/agent"
    assert "OLDPWD" not in world.env
    assert world.fs.names("/workspace") == []
    assert world.fs.names("/home/agent") == []
    with pytest.raises(Unanswerable):
        world.fs.lookup("/etc")


def test_seeded_files_and_their_folders_are_there_as_the_episode_host_writes_them():
    world = make_world({"notes.txt": "hi\n", "src/deep/main.py": "print(1)\n"})
    notes, src = world.fs.nodes["/workspace/notes.txt"], world.fs.nodes["/workspace/src"]
    assert (notes.kind, notes.mode, notes.content, notes.invented) == (FILE, 0o644, "hi\n", False)
    assert (src.kind, src.mode, src.complete) == (DIR, 0o755, True)
    assert world.fs.nodes["/workspace/src/deep/main.py"].content == "print(1)\n"


def test_the_state_survives_json():
    world = make_world({"a.txt": "x\n", "d/b.txt": "y\n"})
    world.env["X"] = None
    world.exit_code = 3
    text = json.dumps(world.to_json())
    back = ShellWorld.from_json(json.loads(text))
    assert back.to_json() == world.to_json()
    assert back.clock == CLOCK
    assert back.fs.names("/workspace") == world.fs.names("/workspace")


def test_seeding_keeps_the_caps():
    world = new_world()
    seed_files(world, {"big.txt": "x" * (300 * 1024), "small.txt": "s\n"})
    assert world.fs.nodes["/workspace/big.txt"].content is None  # the name stays, its content is unknown
    assert world.fs.nodes["/workspace/small.txt"].content == "s\n"
