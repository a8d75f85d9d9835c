"""What every route's answer teaches the state: the line's effects, what the answer shows,
and provenance (a simulated answer is invented and never overrides a real one)."""

from __future__ import annotations

import pytest
from kit.shell_world import make_world, out, sh, unanswered

from backends.shell.screen import ShellResult
from backends.world_state.shell import observe, run
from backends.world_state.shell.filesystem import DIR, FILE
from calls import Provenance

REAL, SIM, REPLAY = Provenance.REAL, Provenance.SIM, Provenance.REPLAY


def answer(output: str = "", exit_code: int | None = 0, cwd: str | None = "/workspace", **extra) -> ShellResult:
    return ShellResult(output, exit_code, cwd, **extra)


def unseeded():
    """A sandbox whose workspace came from a folder the state never saw."""
    world = make_world()
    world.fs.forget_entries("/workspace")
    return world


def test_a_real_answers_effects_are_applied_so_a_simulated_read_sees_them():
    world = make_world()
    observe(world, "echo hi > f && mkdir -p d/e", answer(), provenance=REAL)
    assert sh(world, "cat f; ls d") == ("hi\ne\n", 0)
    observe(world, "rm f", answer(), provenance=REAL)
    assert sh(world, "cat f") == ("cat: f: No such file or directory\n", 1)


def test_real_then_simulated_then_real_stays_with_the_real_side():
    world = make_world()
    observe(world, "echo a > x", answer(), provenance=REAL)
    assert run(world, "echo b >> x") is not None  # the sim route answered from state
    observe(world, "cat x", answer("a\n"), provenance=REAL)  # the real sandbox never saw the append
    assert out(world, "cat x") == "a\n"


def test_a_plain_real_listing_teaches_every_name_but_the_dot_names():
    world = unseeded()
    observe(world, "ls", answer("a.txt\nsub\n"), provenance=REAL)
    assert out(world, "ls") == "a.txt\nsub\n"
    assert sh(world, "cat nope") == ("cat: nope: No such file or directory\n", 1)
    assert unanswered(world, "ls -a")
    assert unanswered(world, "cat .env")


def test_a_real_listing_teaches_names_and_a_simulated_read_is_invented_until_a_real_one():
    world = unseeded()
    observe(world, "ls -a", answer(".\n..\na.txt\nsub\n"), provenance=REAL)
    assert out(world, "ls") == "a.txt\nsub\n"
    assert unanswered(world, "cat a.txt")  # a name the state has never read: the model writes it
    observe(world, "cat a.txt", answer("made up\n"), provenance=SIM)
    outcome = run(world, "cat a.txt")
    assert outcome is not None and (outcome.output, outcome.invented) == ("made up\n", True)
    observe(world, "cat a.txt", answer("the real text\n"), provenance=REAL)
    outcome = run(world, "cat a.txt")
    assert outcome is not None and (outcome.output, outcome.invented) == ("the real text\n", False)


def test_a_simulated_answer_never_overrides_what_a_real_one_taught():
    world = unseeded()
    observe(world, "cat notes.txt", answer("real\n"), provenance=REPLAY)
    observe(world, "cat notes.txt", answer("invented\n"), provenance=SIM)
    assert out(world, "cat notes.txt") == "real\n"


def test_a_simulated_answer_contradicting_the_state_changes_nothing():
    world = make_world({"a.txt": "a\n"})
    before = world.to_json()
    observe(world, "cat a.txt", answer("something else\n"), provenance=SIM)
    observe(world, "cat a.txt", answer("cat: a.txt: No such file or directory\n", 1), provenance=SIM)
    assert world.to_json()["paths"] == before["paths"]


def test_a_real_answer_corrects_the_state():
    world = make_world({"a.txt": "a\n"})
    observe(world, "cat a.txt", answer("changed behind our back\n"), provenance=REAL)
    assert out(world, "cat a.txt") == "changed behind our back\n"


def test_a_plain_real_listing_removes_what_is_gone_and_adds_what_is_new():
    world = make_world({"a.txt": "a\n", ".hidden": "h\n"})
    observe(world, "ls", answer("b.txt\n"), provenance=REAL)
    names = world.fs.known_names("/workspace")
    assert names == {"b.txt", ".hidden"}
    assert unanswered(world, "cat b.txt")


def test_a_long_listing_teaches_kinds():
    world = unseeded()
    listing = "total 4\ndrwxr-xr-x 2 agent agent 40 Nov 28 02:49 d\n-rw-r--r-- 1 agent agent 3 Nov 28 02:49 f\n"
    observe(
        world,
        "ls -la",
        answer(listing.replace("total 4\n", "total 4\ndrwxr-xr-x 3 agent agent 80 Nov 28 02:49 .\n")),
        provenance=REAL,
    )
    assert world.fs.nodes["/workspace/d"].kind == DIR
    assert world.fs.nodes["/workspace/f"].kind == FILE
    assert sh(world, "cd d && pwd") == ("/workspace/d\n", 0)


def test_a_program_the_state_does_not_know_makes_what_it_may_touch_unknown():
    world = make_world({"data.csv": "1\n", "gen.py": "...", "keep.txt": "k\n"})
    observe(world, "python3 gen.py data.csv", answer("done\n"), provenance=REAL)
    assert unanswered(world, "cat data.csv")
    assert unanswered(world, "ls")  # it may have written new files here
    observe(world, "for f in *.txt; do sed -i s/k/K/ $f; done", answer(), provenance=REAL)
    assert unanswered(world, "cat keep.txt")


def test_read_only_programs_change_nothing():
    world = make_world({"a.txt": "a\n"})
    observe(world, "sort a.txt | uniq -c", answer("      1 a\n"), provenance=REAL)
    assert out(world, "cat a.txt; ls") == "a\na.txt\n"


def test_the_answers_working_directory_and_exit_code():
    world = make_world()
    observe(world, "cd /tmp/build 2>/dev/null || cd /opt/app", answer("", 0, "/opt/app"), provenance=REAL)
    assert world.cwd == "/opt/app"
    assert world.fs.nodes["/opt/app"].kind == DIR
    assert unanswered(world, "cd -")  # which cd ran, and so the previous directory, is not known
    observe(world, "false", answer("", 1, "/opt/app"), provenance=REAL)
    assert world.exit_code == 1
    assert out(world, "echo $?") == "0\n"  # the channel starts each line's $? afresh (executor.py)


def test_variables_set_by_a_line_the_state_cannot_follow_are_unknown():
    world = make_world()
    observe(world, "export TOKEN=$(cat /run/secret)", answer(), provenance=REAL)
    assert unanswered(world, "echo $TOKEN")


def test_a_real_test_teaches_existence():
    world = unseeded()
    observe(world, "[ -d build ]", answer("", 0), provenance=REAL)
    assert world.fs.nodes["/workspace/build"].kind == DIR
    observe(world, "test -e build", answer("", 1), provenance=REAL)
    assert "/workspace/build" not in world.fs.nodes


def test_an_answer_cut_short_or_after_a_reset_teaches_only_doubt():
    world = make_world({"a.txt": "a\n"})
    observe(world, "echo more >> a.txt; sleep 100", answer("", None, None, timed_out=True), provenance=REAL)
    assert unanswered(world, "cat a.txt")
    world = make_world({"a.txt": "a\n"})
    observe(
        world, "true", answer("", 0, reset="the sandbox was replaced with a fresh one (files reset)"), provenance=REAL
    )
    assert unanswered(world, "cat a.txt")


@pytest.mark.parametrize("provenance", [REAL, SIM])
def test_an_answer_the_state_gave_itself_is_consistent(provenance):
    world = make_world({"a.txt": "a\n"})
    trial = make_world({"a.txt": "a\n"})
    outcome = run(trial, "echo b >> a.txt; cat a.txt")
    assert outcome is not None
    observe(world, "echo b >> a.txt; cat a.txt", answer(outcome.output), provenance=provenance)
    assert out(world, "cat a.txt") == "a\nb\n"
