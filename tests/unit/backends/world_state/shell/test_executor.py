"""Running a line against the state: lists, pipelines, redirections, here-documents, the
merged terminal, bash's own messages, and a declined line changing nothing."""

from __future__ import annotations

import time

import pytest
from kit.shell_world import make_world, out, sh, unanswered

from backends.world_state.shell import run
from backends.world_state.shell.executor import ShellOutcome
from backends.world_state.shell.filesystem import FILE, Node


@pytest.fixture
def world():
    return make_world({"notes.txt": "alpha\nbeta\ngamma\n", "src/main.py": "print(1)\n"})


def test_an_outcome_has_output_exit_code_and_cwd(world):
    outcome = run(world, "cd src && pwd")
    assert outcome == ShellOutcome("/workspace/src\n", 0, "/workspace/src")
    assert world.cwd == "/workspace/src"
    assert outcome.to_result().structured()["cwd"] == "/workspace/src"


def test_and_or_lists_short_circuit_and_set_the_exit_code(world):
    assert sh(world, "true && echo a || echo b") == ("a\n", 0)
    assert sh(world, "false && echo a || echo b") == ("b\n", 0)
    assert sh(world, "false; echo $?; true; echo $?") == ("1\n0\n", 0)
    assert sh(world, "true && false") == ("", 1)
    assert sh(world, "! true; echo $?; ! false") == ("1\n", 0)


def test_pipelines_feed_each_stage_and_end_with_the_last_code(world):
    assert sh(world, "cat notes.txt | grep a | wc -l") == ("3\n", 0)
    assert sh(world, "cat missing | wc -l") == ("cat: missing: No such file or directory\n0\n", 0)
    assert sh(world, "echo x | grep y") == ("", 1)


def test_pipeline_stages_are_subshells(world):
    assert sh(world, "cd src | true; pwd") == ("/workspace\n", 0)
    assert sh(world, 'export A=1 | true; echo "[$A]"') == ("[]\n", 0)


def test_stderr_is_merged_in_the_order_it_was_written(world):
    assert sh(world, "cat notes.txt missing notes.txt") == (
        "alpha\nbeta\ngamma\ncat: missing: No such file or directory\nalpha\nbeta\ngamma\n",
        1,
    )


def test_redirections(world):
    assert sh(world, "echo one > f; echo two >> f; cat f") == ("one\ntwo\n", 0)
    assert sh(world, "cat missing 2> err; cat err") == ("cat: missing: No such file or directory\n", 0)
    assert sh(world, "cat missing > out 2>&1; cat out") == ("cat: missing: No such file or directory\n", 0)
    assert sh(world, "cat missing 2>&1 > out2; cat out2") == ("cat: missing: No such file or directory\n", 0)
    assert sh(world, "cat missing &> both; cat both") == ("cat: missing: No such file or directory\n", 0)
    assert sh(world, "cat missing 2>/dev/null; echo $?") == ("1\n", 0)
    assert sh(world, "echo to-err >&2 | wc -l") == ("to-err\n0\n", 0)
    assert sh(world, "> empty; wc -c empty") == ("0 empty\n", 0)
    assert sh(world, "wc -l < notes.txt; wc < notes.txt") == ("3\n 3  3 17\n", 0)


def test_redirection_errors_are_bashs_and_the_command_does_not_run(world):
    assert sh(world, "echo x > nodir/f") == ("main: line 2: nodir/f: No such file or directory\n", 1)
    assert sh(world, "echo x > src") == ("main: line 2: src: Is a directory\n", 1)
    assert sh(world, "cat < nope") == ("main: line 2: nope: No such file or directory\n", 1)
    assert sh(world, "echo x > notes.txt/f") == ("main: line 2: notes.txt/f: Not a directory\n", 1)


def test_bash_counts_lines_from_two(world):
    assert sh(world, "echo one\ncd nope") == ("one\nmain: line 3: cd: nope: No such file or directory\n", 1)


def test_here_documents_and_strings(world):
    assert sh(world, "cat <<EOF > h\nhome $HOME\nEOF\ncat h") == ("home /home/agent\n", 0)
    assert sh(world, "cat <<'EOF'\nhome $HOME\nEOF") == ("home $HOME\n", 0)
    assert sh(world, "cat <<EOF | wc -l\na\nb\nEOF") == ("2\n", 0)
    assert sh(world, "wc -w <<< 'one two'") == ("2\n", 0)


def test_a_file_read_and_written_by_one_command(world):
    assert sh(world, "cat notes.txt >> notes.txt") == ("cat: notes.txt: input file is output file\n", 1)
    assert sh(world, "cat notes.txt > notes.txt; wc -c notes.txt") == ("0 notes.txt\n", 0)


@pytest.mark.parametrize(
    "line",
    [
        "python3 script.py",
        "ls -R",
        "echo hi > f; git status",  # the first part would change the state: nothing may
        "LANG=C ls",
        "cat /etc/passwd",
        "ls /usr/bin | head",
        "echo $(date)",
    ],
)
def test_a_line_the_state_cannot_answer_changes_nothing(world, line):
    assert unanswered(world, line)


def test_unknown_content_is_passed_on_but_never_shown(world):
    world.fs.put("/workspace/secret", Node(FILE, content=None))
    assert sh(world, "cp secret copy; cat secret > again; mv again moved; ls") == (
        "copy\nmoved\nnotes.txt\nsecret\nsrc\n",
        0,
    )
    assert world.fs.nodes["/workspace/moved"].content is None
    assert unanswered(world, "cat copy")
    assert unanswered(world, "wc -l secret")


def test_output_longer_than_the_channels_screen_is_trimmed_like_it(world):
    out(world, "touch " + " ".join(f"f{i:03}" for i in range(300)))
    outcome = run(world, "ls")
    assert outcome is not None and outcome.truncated
    assert "lines omitted" in outcome.output


@pytest.mark.serial
def test_an_answer_takes_a_fraction_of_a_millisecond(world):
    run(world, "ls")  # the parser's first load
    lines = ["echo hi > f", "cat f | wc -l", "ls -l", "grep -c a notes.txt"]
    started = time.perf_counter()
    for _ in range(50):
        for line in lines:
            run(world, line)
    # ~0.1-0.5 ms a line on this project's 2-core machines; the bound leaves room for a loaded one.
    assert (time.perf_counter() - started) / (50 * len(lines)) < 0.005


def test_pipeline_stages_run_at_once_so_racing_writes_are_left_to_the_model(world):
    # An earlier stage's message comes first when the later stages wait for their input.
    assert sh(world, "cat missing | wc -l") == ("cat: missing: No such file or directory\n0\n", 0)
    assert sh(world, "cat notes.txt | grep a > hits.txt; cat hits.txt") == ("alpha\nbeta\ngamma\n", 0)
    # A message after what a stage fed the next one races it (or dies with it by SIGPIPE).
    assert unanswered(world, "cat notes.txt missing | head -n 1")
    # A later stage that writes without reading its input races an earlier writer.
    assert unanswered(world, "cat missing | cat nope")
    # A stage changing what another one looks at.
    assert unanswered(world, "mkdir x | touch x")
    assert unanswered(world, "ls | wc -l > count.txt")
