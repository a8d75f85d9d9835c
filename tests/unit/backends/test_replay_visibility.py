"""Which recordings a session may be shown (backends/replay.py): with tokens, its own
token's and the shared namespaces', never another token's."""

from __future__ import annotations

from backends.replay import ReplayBackend
from calls import Call


def backend(**options) -> ReplayBackend:
    return ReplayBackend(None, **options)  # type: ignore[arg-type]  # keys and visibility only: no store


def test_without_tokens_every_recording_is_visible_and_keys_are_bare():
    replay = backend(shared_namespaces=["ci"])  # no tokens: nothing to share or keep apart
    assert replay.visible("alice/a", "bob/b") and replay.shared == ()
    assert not replay.keys(Call("mcp", "s", "t", {}, "alice/a")).replay.startswith("alice/")


def test_with_tokens_a_session_sees_its_own_token_and_the_shared_ones_only():
    replay = backend(namespaced=True, shared_namespaces=["ci"])
    assert replay.visible("alice/a", "alice/b") and replay.visible("bob/b", "ci/golden")
    assert not replay.visible("bob/b", "alice/a") and not replay.visible("bob/b", "stdio-1234")
    key = replay.keys(Call("mcp", "s", "t", {"x": 1}, "bob/b")).replay
    bare = key.removeprefix("bob/")
    assert key.startswith("bob/") and replay.visible_keys(key, "bob/b") == [key, "ci/" + bare]  # own first
    assert replay._key_in(key, "bob/b", "ci/golden") == "ci/" + bare and replay._key_in(key, "bob/b", "bob/c") == key
    assert backend(namespaced=True).visible_keys(key, "bob/b") == [key]  # nothing shared: own only
