"""The learned router's guess of how a simulated shell call would be answered: from
state when the world-state executor runs every program of the line."""

from __future__ import annotations

from calls import Call, Session
from router.runtime.expected_sub import expected_sub, runs_from_state


def test_a_line_of_programs_the_executor_runs_is_guessed_state_and_any_other_the_models():
    assert runs_from_state("cat notes.txt") and runs_from_state("echo hi > f && ls -l | head -n 2; X=1")
    assert not runs_from_state("python train.py") and not runs_from_state("cat $(ls)") and not runs_from_state("$CMD f")
    guess = expected_sub(lambda channel, server: server != "off")
    assert guess(Call("shell", "sh", "exec", {"command": "ls"}, "s"), Session("s")) == "state"
    assert guess(Call("shell", "sh", "exec", {"command": "git commit -m x"}, "s"), Session("s")) == "model+state"
    # The world state is off there.
    assert guess(Call("shell", "off", "exec", {"command": "ls"}, "s"), Session("s")) is None
    assert guess(Call("mcp", "git", "git_commit", {}, "s"), Session("s")) is None
