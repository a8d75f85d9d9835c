"""`compare-models --end-to-end`'s pieces: held-out sessions never a source of answers
(the replay keys withhold them),
and each held-out call's world state learnt from its session's real history before it."""

from __future__ import annotations

from backends.replay import ReplayBackend
from calls import Call, Observation, Provenance, Turn
from router.reports.compare_state import HistoryStates
from router.runtime.example_lookup import keyed_lookup


def test_held_out_sessions_are_never_visible_and_the_rest_is_the_replay_backends():
    keys = ReplayBackend(
        None,  # type: ignore[arg-type]  # visibility reads no store
        namespaced=True,
        withheld=lambda session: session.endswith("held"),
    )
    assert keys.visible("a/1", "a/train")
    assert not keys.visible("a/1", "a/held")  # another held-out session: what is being measured
    assert not keys.visible("a/1", "b/train")  # the backend's own rule still holds
    assert keys.visible_namespaces("a/1") == ("a/",)
    lookup = keyed_lookup(None, keys)  # type: ignore[arg-type]
    assert lookup.withheld is keys.withheld  # the examples' query asks for enough of the rest


def shell(command: str, output: str, *, provenance: Provenance = Provenance.REAL, perturbed: bool = False) -> Turn:
    structured = {"output": output, "exit_code": 0, "cwd": "/workspace", "timed_out": False, "truncated": False}
    call = Call("shell", "sandbox", "shell_exec", {"command": command}, session_id="s1")
    observation = Observation([{"type": "text", "text": output}], provenance, structured=structured)
    return Turn(call, observation, perturbed=perturbed)


def files(state) -> dict[str, str | None]:
    world = state.shell_world()
    return {path: node.content for path, node in world.fs.nodes.items() if path.startswith("/workspace/")}


def test_each_call_gets_a_copy_of_what_its_history_taught():
    turns = [
        shell("echo one > a.txt", ""),
        shell("echo two > b.txt", "", perturbed=True),  # a perturbed answer teaches nothing
        shell("echo three > c.txt", ""),
    ]
    times = [1.0, 2.0, 3.0]
    states = HistoryStates()
    first = states.before("s1", turns, times, 1)
    assert files(first) == {"/workspace/a.txt": "one\n"}
    first.shell_world().fs.nodes.clear()  # what a state answer does to its copy stays there
    third = states.before("s1", turns, times, 3)
    assert files(third) == {"/workspace/a.txt": "one\n", "/workspace/c.txt": "three\n"}
    again = states.before("s1", turns, times, 1)  # an earlier call again: learnt from the start
    assert files(again) == {"/workspace/a.txt": "one\n"}
    assert files(states.before("s2", turns, times, 0)) == {}
