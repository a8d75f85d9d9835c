"""Where a session diverged into its fork, read from its records' sources."""

from kit.records import OLD_ROW, forked_session, sourced_record

from records.fork_point import describe, divergence_points, diverges_here


def test_the_forks_first_call_is_the_divergence_point_with_what_was_copied():
    rows = [record.to_json() for record in forked_session("alice/s1", ts=1_800_000_000.0)]
    (point,) = divergence_points(rows)
    assert (point["record"], point["step"], point["fork"], point["from"]) == (
        rows[1]["id"],
        1,
        "fork-1a2b",
        "session sandbox",
    )
    assert point["copied"]["cwd"] == "/workspace/data" and point["copied"]["folders"]["/workspace"] == 2048
    assert describe(point) == (
        "diverged into fork fork-1a2b (from session sandbox): "
        "copied /workspace 2.0 KB, /tmp 0 B, cwd /workspace/data, 7 variables"
    )
    # Only the newest records read (a --limit): the later call on the fork is no divergence point.
    assert divergence_points(rows[2:]) == []


def test_a_fork_record_without_a_call_number_diverges_where_its_fork_is_first_met():
    rows = [record.to_json() for record in forked_session("s", ts=1.0)]
    for row in rows[1:]:
        del row["observation"]["source"]["fork"]["call"]
    seen: set[str] = set()
    assert [diverges_here(row, seen) for row in rows] == [False, True, False]


def test_answers_from_no_fork_never_diverge():
    # An old row without a source; a model's answer whose unknown `fork` key is no fork's description.
    import json

    assert divergence_points([json.loads(OLD_ROW), sourced_record().to_json()]) == []


def test_an_mcp_forks_divergence_names_the_state_paths_copied():
    row = forked_session("s", ts=1.0)[1].to_json()
    row["observation"]["source"]["fork"] = {
        "id": "f9",
        "call": 1,
        "server": "git",
        "from": "server state",
        "copied": {"paths": {"/srv/repo": 4096}, "bytes": 4096},
    }
    (point,) = divergence_points([row])
    assert describe(point) == "diverged into fork f9 (from server state): copied /srv/repo 4.0 KB"
