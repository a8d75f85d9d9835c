"""What a line may have changed, read from any bash: named paths, run-time names, new files."""

from __future__ import annotations

from backends.world_state.shell.touched import touched


def test_read_only_programs_touch_nothing():
    assert touched("cat a | grep b | sort | uniq -c; ls -la; sed s/a/b/ f") == touched("")


def test_file_commands_touch_what_they_name():
    found = touched("rm -f a.txt; mv b c; cp -r d e; echo x > out.log 2>/dev/null")
    assert found.paths == {"a.txt", "b", "c", "d", "e", "out.log"}
    assert not found.anywhere and not found.new_files_here


def test_other_programs_may_also_make_files_where_they_run():
    found = touched("python3 gen.py --out data.json")
    assert found.paths == {"gen.py", "data.json"}
    assert found.new_files_here


def test_names_known_only_at_run_time_touch_anything():
    assert touched("rm *.tmp").anywhere
    assert touched("for f in a b; do touch $f; done").anywhere
    assert touched('echo x > "$(date)"').anywhere
    assert touched("sed -i s/a/b/ config.ini").paths == {"s/a/b/", "config.ini"}


def test_assigned_variables_and_loop_variables():
    assert touched("export A=1; B=2; for C in x; do :; done").variables == {"A", "B", "C"}
