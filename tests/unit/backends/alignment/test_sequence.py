"""Where a call stands in a recorded session's calls to its environment."""

from __future__ import annotations

from kit.calls import make_call

from backends.alignment.sequence import align


def git(tool: str, repo: str, **arguments) -> object:
    return make_call(tool, {"repo_path": repo, **arguments}, server="git")


RECORDED = [
    git("git_status", "/a"),
    git("git_add", "/a", files=["x.py"]),
    git("git_status", "/a"),
    git("git_commit", "/a", message="m"),
]


def test_the_call_stands_after_the_calls_this_session_made():
    known = [git("git_status", "/b"), git("git_add", "/b", files=["y.py"])]
    found = align(RECORDED, known, git("git_status", "/b"), anchored=True)
    assert found is not None and found.position == 2 and found.renaming.changed == {"/a": "/b", "x.py": "y.py"}


def test_another_order_another_tool_or_a_conflicting_value_does_not_align():
    assert align(RECORDED, [git("git_add", "/b", files=["y.py"])], git("git_status", "/b"), anchored=True) is None
    assert align(RECORDED, [git("git_status", "/b")], git("git_commit", "/b", message="m"), anchored=True) is None
    known = [git("git_status", "/b"), git("git_add", "/c", files=["y.py"])]  # /a was /b, now /c
    assert align(RECORDED, known, git("git_status", "/b"), anchored=True) is None
    assert align(RECORDED, [*RECORDED], git("git_status", "/a"), anchored=True) is None  # past the recording's end


def test_a_window_of_known_calls_aligns_at_its_earliest_place():
    recorded = [git("git_log", "/a"), *RECORDED, *RECORDED]
    known = [git("git_add", "/b", files=["y.py"])]  # this session's start is no longer known
    found = align(recorded, known, git("git_status", "/b"), anchored=False)
    assert found is not None and found.position == 3
    # Anchored, it would be the first call's successor.
    assert align(recorded, known, git("git_status", "/b"), anchored=True) is None
