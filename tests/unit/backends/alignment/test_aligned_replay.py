"""Sequence-aligned replay over a real SQLite store: what a simulated call is served
from recorded real sessions, and what is never served."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest
from kit.calls import make_call

from backends.alignment import AlignedReplay
from backends.replay import ReplayBackend
from calls import Call, Decision, Observation, Provenance, Route, Session, Turn
from records.record import Record
from records.store.sqlite.store import SQLiteStore

Step = tuple[str, dict[str, Any], str]  # tool, arguments, the answer's text

A = "/tmp/work-a/repo"
B = "/tmp/work-b/other"


def git(tool: str, repo: str, session: str = "now", **arguments: Any) -> Call:
    return make_call(tool, {"repo_path": repo, **arguments}, server="git", session=session)


def warm_up(repo: str) -> list[Step]:
    """A session's git calls on `repo`, with what the server answered."""
    return [
        ("git_status", {"repo_path": repo}, "On branch main\nUntracked files:\n\tnotes.txt"),
        ("git_add", {"repo_path": repo, "files": ["notes.txt"]}, "Files staged successfully"),
        (
            "git_status",
            {"repo_path": repo},
            f"On branch main\nChanges to be committed:\n\tnew file:   {repo}/notes.txt",
        ),
        (
            "git_commit",
            {"repo_path": repo, "message": "Add notes"},
            "Changes committed successfully with hash 1a2b3c4d",
        ),
        ("git_log", {"repo_path": repo, "max_count": 1}, "Commit: 1a2b3c4d\nMessage: Add notes"),
    ]


@pytest.fixture
async def store(tmp_path):
    opened = await SQLiteStore(tmp_path / "records.db").open()
    yield opened
    await opened.aclose()


async def record(
    store: SQLiteStore,
    session: str,
    steps: Sequence[Step],
    *,
    ts: float | None = None,
    servers: dict[int, str] | None = None,
    **changes: Any,
) -> list[str]:
    """`steps` recorded as real calls of `session` to server git (`servers`: step -> another
    server), in order; `changes["at<i>"]` alters record i (provenance, perturbation, status, truncated)."""
    replay, ts = ReplayBackend(store), ts or time.time()
    rows, occurrences = [], {}
    for step, (tool, arguments, text) in enumerate(steps):
        call = Call("mcp", (servers or {}).get(step, "git"), tool, arguments, session)
        keys = replay.keys(call)
        occurrences[keys.replay] = occurrences.get(keys.replay, 0) + 1
        change = changes.get(f"at{step}", {})
        served = Observation(
            [{"type": "text", "text": text}],
            Provenance(change.get("provenance", "real")),
            structured={"truncated": True} if change.get("truncated") else None,
        )
        made = Record(
            call,
            Decision(Route.REAL, "mode", ""),
            served,
            step,
            keys.exact,
            ts=ts + step,
            status=change.get("status", "complete"),
        )
        made.replay_key, made.occurrence, made.perturbation = (
            keys.replay,
            occurrences[keys.replay],
            change.get("perturbation"),
        )
        rows.append(made.to_json())
    await store.upsert(rows)
    return [row["id"] for row in rows]


def now_session(
    steps: Sequence[Step], session: str = "now", *, forgotten: int = 0, servers: dict[int, str] | None = None
) -> Session:
    """This session after `steps` (its answers simulated; `servers` as `record`'s), its next call claimed."""
    simulated = Observation([{"type": "text", "text": "?"}], Provenance.SIM)
    history = [
        Turn(Call("mcp", (servers or {}).get(i, "git"), tool, arguments, session), simulated)
        for i, (tool, arguments, _) in enumerate(steps)
    ]
    return Session(session, history=history, steps=forgotten + len(steps) + 1, forgotten=forgotten)


async def test_the_answer_at_the_aligned_position_with_this_sessions_values(store):
    ids = await record(store, "warm", warm_up(A))
    aligned = AlignedReplay(store, ReplayBackend(store))
    now = warm_up(B)
    answer = await aligned.answer(git("git_status", B), now_session(now[:2]))
    assert answer is not None and (answer.basis, answer.position, answer.record_id, answer.source_session) == (
        "sequence",
        2,
        ids[2],
        "warm",
    )
    assert answer.observation.text == f"On branch main\nChanges to be committed:\n\tnew file:   {B}/notes.txt"
    assert answer.observation.provenance is Provenance.SIM and not answer.observation.is_error
    assert answer.renaming == {A: B}
    commit = await aligned.answer(git("git_commit", B, message="Store notes"), now_session(now[:3]))
    assert commit is not None and commit.renaming == {A: B, "Add notes": "Store notes"}
    log = await aligned.answer(
        git("git_log", B, max_count=1),
        now_session([*now[:3], ("git_commit", {"repo_path": B, "message": "Store notes"}, "")]),
    )
    assert log is not None and log.observation.text == "Commit: 1a2b3c4d\nMessage: Store notes"


async def test_calls_to_other_environments_in_between_do_not_count(store):
    clock = ("get_current_time", {"timezone": "UTC"}, "12:00")
    await record(store, "warm", [warm_up(A)[0], clock, *warm_up(A)[1:]], servers={1: "time"})
    session = now_session([clock, warm_up(B)[0]], servers={0: "time"})
    answer = await AlignedReplay(store, ReplayBackend(store)).answer(git("git_add", B, files=["notes.txt"]), session)
    assert answer is not None and (answer.position, answer.observation.text) == (1, "Files staged successfully")


async def test_another_order_or_a_renaming_conflict_is_no_answer(store):
    await record(store, "warm", warm_up(A))
    aligned = AlignedReplay(store, ReplayBackend(store))
    swapped = [warm_up(B)[1]]  # git_add first: the recording began with git_status
    assert await aligned.answer(git("git_status", B), now_session(swapped)) is None
    conflict = [warm_up(B)[0], ("git_add", {"repo_path": "/tmp/third", "files": ["notes.txt"]}, "")]
    assert await aligned.answer(git("git_status", B), now_session(conflict)) is None


@pytest.mark.parametrize(
    "change",
    [
        {"provenance": "sim"},  # the world model's answer in the recording
        {"provenance": "none"},  # simroute's own (a denial, a deadline)
        {"perturbation": {"kind": "error", "rule": "p:r", "seed": 1, "n": 1}},
        {"truncated": True},
        {"status": "started"},  # the call never finished there
    ],
)
async def test_only_finished_real_answers_are_served(store, change):
    await record(store, "warm", warm_up(A), at2=change)
    answer = await AlignedReplay(store, ReplayBackend(store)).answer(git("git_status", B), now_session(warm_up(B)[:2]))
    assert answer is None


async def test_the_newest_recording_that_can_answer_wins(store):
    older = warm_up(A)
    newer = [*warm_up(A)[:2], ("git_status", {"repo_path": A}, "newer status")]
    await record(store, "older", older, ts=time.time() - 100)
    await record(store, "newer", newer, ts=time.time() - 50, at2={"provenance": "sim"})
    await record(store, "newest", newer, ts=time.time())
    aligned = AlignedReplay(store, ReplayBackend(store))
    answer = await aligned.answer(git("git_status", B), now_session(warm_up(B)[:2]))
    assert answer is not None and (answer.source_session, answer.observation.text) == ("newest", "newer status")


async def test_a_session_whose_start_was_dropped_aligns_its_known_calls(store):
    await record(store, "warm", warm_up(A))
    session = now_session(warm_up(B)[1:3], forgotten=1)  # git_status was dropped from memory
    answer = await AlignedReplay(store, ReplayBackend(store)).answer(git("git_commit", B, message="Add notes"), session)
    assert answer is not None and answer.position == 3


async def test_another_tokens_recordings_are_never_read(store):
    await record(store, "alice/warm", warm_up(A))
    await record(
        store,
        "ci/golden",
        [(tool, arguments, text.upper()) for tool, arguments, text in warm_up(A)],
        ts=time.time() - 100,
    )
    replay = ReplayBackend(store, namespaced=True, shared_namespaces=["ci"])
    aligned = AlignedReplay(store, replay)
    own = await aligned.answer(
        git("git_add", B, session="alice/now", files=["notes.txt"]), now_session(warm_up(B)[:1], "alice/now")
    )
    assert own is not None and own.source_session == "alice/warm"
    shared = await aligned.answer(
        git("git_add", B, session="bob/now", files=["notes.txt"]), now_session(warm_up(B)[:1], "bob/now")
    )
    assert shared is not None and (shared.source_session, shared.observation.text) == (
        "ci/golden",
        "FILES STAGED SUCCESSFULLY",
    )
    assert (
        await aligned.answer(
            git("git_add", B, session="carol/x", files=["notes.txt"]), now_session(warm_up(B)[:1], "carol/x")
        )
        is not None
    )
    solo = AlignedReplay(store, ReplayBackend(store, namespaced=True))
    assert (
        await solo.answer(
            git("git_add", B, session="bob/now", files=["notes.txt"]), now_session(warm_up(B)[:1], "bob/now")
        )
        is None
    )


async def test_a_call_whose_key_has_only_identical_answers_is_answered_from_them(store):
    version = [("git_log", {"repo_path": A, "max_count": 1}, "Commit: 1a2b3c4d")]
    await record(store, "one", version, ts=time.time() - 20)
    await record(store, "two", version, ts=time.time() - 10)
    aligned = AlignedReplay(store, ReplayBackend(store))
    session = now_session([("git_status", {"repo_path": A}, "")])  # a prefix no recording made
    answer = await aligned.answer(git("git_log", A, max_count=1), session)
    assert answer is not None and (answer.basis, answer.source_session, answer.observation.text) == (
        "identical",
        "two",
        "Commit: 1a2b3c4d",
    )
    assert answer.observation.provenance is Provenance.SIM
    assert (
        await AlignedReplay(store, ReplayBackend(store), min_identical=3).answer(
            git("git_log", A, max_count=1), session
        )
        is None
    )
    await record(store, "three", [("git_log", {"repo_path": A, "max_count": 1}, "Commit: 9f9f9f9f")])
    assert await aligned.answer(git("git_log", A, max_count=1), session) is None  # the key's answers differ


async def test_other_channels_are_not_answered_and_the_options_are_checked(store):
    await record(store, "warm", warm_up(A))
    aligned = AlignedReplay(store, ReplayBackend(store))
    assert await aligned.answer(make_call("run", {"command": "ls"}, channel="shell"), Session("now")) is None
    with pytest.raises(ValueError, match="at least 1"):
        AlignedReplay(store, ReplayBackend(store), candidates=0)


class CountingStore:
    """The store, counting the lookups aligned replay makes."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store, self.searches, self.read = store, 0, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def tool_sessions(self, *args: Any, **kwargs: Any) -> list[str]:
        self.searches += 1
        return await self.store.tool_sessions(*args, **kwargs)

    async def session_records(self, session: str, *, before_step: int, limit: int) -> list[Record]:
        self.read.append(limit)
        return await self.store.session_records(session, before_step=before_step, limit=limit)


async def test_a_session_follows_its_recording_reading_only_the_calls_since(store):
    clock = ("get_current_time", {"timezone": "UTC"}, "12:00")
    await record(
        store, "warm", [*warm_up(A), clock, clock, clock, *warm_up(A)], servers={5: "time", 6: "time", 7: "time"}
    )
    counting = CountingStore(store)
    aligned = AlignedReplay(counting, ReplayBackend(store), read_ahead=4)
    session, texts = Session("now"), []
    for tool, arguments, _ in [*warm_up(B), *warm_up(B)]:
        call = Call("mcp", "git", tool, arguments, "now")
        session.steps += 1
        answer = await aligned.answer(call, session)
        assert answer is not None
        texts.append(answer.observation.text)
        session.add_turn(Turn(call, answer.observation))  # what the engine does: the turn holds the call answered
    assert texts == [text.replace(A, B) for _, _, text in [*warm_up(A), *warm_up(A)]]
    # One search; then the recording's next record and 2 past it, and 4 past it when the clock's calls came between.
    assert counting.searches == 1 and counting.read[1:] == [3, 3, 3, 3, 3, 5, 3, 3, 3, 3]
    # A session that leaves the recording's path is searched for again (and here, nothing aligns).
    off = Call("mcp", "git", "git_reset", {"repo_path": B}, "now")
    assert await aligned.answer(off, session) is None and counting.searches == 2


async def test_a_store_that_cannot_be_read_is_a_miss_not_an_error(store, caplog):
    from records.store.protocol import StoreError

    class Down(CountingStore):
        async def tool_sessions(self, *args: Any, **kwargs: Any) -> list[str]:
            raise StoreError("the store is down")

    await record(store, "warm", warm_up(A))
    aligned = AlignedReplay(Down(store), ReplayBackend(store))
    assert await aligned.answer(git("git_status", B), Session("now")) is None
    assert "aligned replay of git.git_status skipped: the store is down" in caplog.text
