"""A consistent renaming of values between a recorded session and this one, and
writing it into a recorded answer."""

from __future__ import annotations

from backends.alignment.renaming import Renaming, kind_of
from calls import Observation, Provenance


def renamed(*pairs: tuple[object, object]) -> Renaming | None:
    renaming = Renaming()
    return renaming if all(renaming.pair(recorded, current) for recorded, current in pairs) else None


def text(value: str) -> Observation:
    return Observation([{"type": "text", "text": value}], Provenance.REAL)


def test_a_repository_path_renames_and_its_files_follow():
    renaming = renamed(
        ({"repo_path": "/tmp/a/repo"}, {"repo_path": "/tmp/b/work"}),
        ({"repo_path": "/tmp/a/repo", "files": ["src/app.py"]}, {"repo_path": "/tmp/b/work", "files": ["lib/util.py"]}),
        ({"path": "/tmp/a/repo/docs"}, {"path": "/tmp/b/work/docs"}),  # under the renamed prefix, as expected
    )
    assert renaming is not None
    assert renaming.changed == {"/tmp/a/repo": "/tmp/b/work", "src/app.py": "lib/util.py"}


def test_a_path_under_a_renamed_prefix_renames_its_head():
    renaming = renamed(({"path": "/tmp/a/src/x.py"}, {"path": "/tmp/b/src/x.py"}))
    assert renaming is not None and renaming.prefixes == {"/tmp/a": "/tmp/b"}
    # The same repository named another way later contradicts it.
    assert renaming.pair({"path": "/tmp/a/docs"}, {"path": "/tmp/c/docs"}) is False
    assert renamed(({"p": "/tmp/a/src/x.py"}, {"p": "/tmp/b/src/x.py"}), ({"p": "/tmp/a/y"}, {"p": "/tmp/a/y"})) is None


def test_a_conflict_breaks_the_renaming():
    # One value, two images.
    assert renamed(({"repo": "/tmp/a"}, {"repo": "/tmp/b"}), ({"repo": "/tmp/a"}, {"repo": "/tmp/c"})) is None
    assert renamed(({"b": "main"}, {"b": "main"}), ({"b": "dev"}, {"b": "main"})) is None  # two values, one image
    assert renamed(({"n": 5}, {"n": 6})) is None  # numbers are equal or nothing
    assert renamed(({"flag": True}, {"flag": 1})) is None
    assert renamed(({"a": "x"}, {"a": "x", "b": "y"})) is None  # another structure
    assert renamed(({"files": ["a", "b"]}, {"files": ["a"]})) is None


def test_values_rename_only_within_their_kind():
    assert kind_of("/tmp/a") == "absolute path" and kind_of("3f2a9c1d") == "hash" and kind_of("HEAD") == "text"
    assert renamed(({"revision": "HEAD"}, {"revision": "3f2a9c1d0b"})) is None
    assert renamed(({"revision": "3f2a9c1d0b"}, {"revision": "77aa0c9e12"})) is not None
    assert renamed(({"repo": "/tmp/a"}, {"repo": "relative/a"})) is None


def test_the_answer_gets_this_sessions_values_where_they_stand_whole():
    renaming = renamed(
        ({"repo_path": "/tmp/a/repo", "files": ["app.py"]}, {"repo_path": "/tmp/b/work", "files": ["util.py"]}),
        ({"message": "Add the app"}, {"message": "Add utilities"}),
    )
    assert renaming is not None
    recorded = text(
        "Path '/tmp/a/repo/app.py' staged; app.py.bak and myapp.py untouched; /tmp/a/repo-old too\nAdd the app"
    )
    served = renaming.apply(recorded).text
    assert (
        served
        == "Path '/tmp/b/work/util.py' staged; app.py.bak and myapp.py untouched; /tmp/a/repo-old too\nAdd utilities"
    )


def test_renaming_is_one_pass_and_the_longest_value_first():
    renaming = renamed(({"a": "alpha", "b": "alphabet"}, {"a": "beta", "b": "alpha"}))
    assert renaming is not None
    # What was written in is not renamed again.
    assert renaming.apply(text("alphabet then alpha")).text == "alpha then beta"


def test_short_values_align_but_are_not_written_and_structured_content_is_renamed():
    renaming = renamed(({"b": "v1", "repo": "/srv/one"}, {"b": "v2", "repo": "/srv/two"}))
    assert renaming is not None
    recorded = Observation(
        [{"type": "text", "text": "v1 at /srv/one"}, {"type": "image", "data": "/srv/one", "mimeType": "image/png"}],
        Provenance.REAL,
        structured={"/srv/one": {"branch": "v1", "files": ["/srv/one/x"]}},
    )
    served = renaming.apply(recorded)
    assert served.content == [
        {"type": "text", "text": "v1 at /srv/two"},
        {"type": "image", "data": "/srv/one", "mimeType": "image/png"},
    ]
    assert served.structured == {"/srv/two": {"branch": "v1", "files": ["/srv/two/x"]}}


def test_without_renamed_values_the_answer_is_the_recorded_one():
    renaming = renamed(({"repo": "/tmp/a"}, {"repo": "/tmp/a"}))
    recorded = text("On branch main")
    assert renaming is not None and renaming.changed == {} and renaming.apply(recorded) is recorded
