"""The one room for shared state: a config's store location decides local or Redis
once, every kind of shared state follows it, and no part outside the room asks."""

from __future__ import annotations

import os
import re
from pathlib import Path

from records.shared_state.answers import LocalAnswers
from records.shared_state.deployment import SharedState
from records.shared_state.episode_rows import LocalEpisodeRows
from records.shared_state.guard_slots import LocalGuardState
from records.shared_state.guard_slots_redis import RedisGuardState
from records.shared_state.published_models import LocalPublishedModels
from records.shared_state.replicas import LocalBackendClaims, LocalReplicaLeases
from records.shared_state.session_state import LocalSessionState
from records.shared_state.session_state_redis import RedisSessionState
from router.config import parse_config

ROOT = Path(__file__).resolve().parents[5]
SQLITE = "mcpServers:\n  time:\n    command: uvx\n"
REDIS = SQLITE + "store:\n  url: redis://:secret@cache.internal:6380/2\n"


async def _judge():
    return lambda owner: True


def test_an_embedded_store_keeps_every_kind_of_shared_state_in_the_process():
    location = parse_config(SQLITE, base_dir=Path("/cfg")).store_location
    shared = location.shared_state(location.open_store())
    assert (location.shared, shared.shared) == (False, False)
    assert isinstance(shared.session_state(ttl_s=60), LocalSessionState)
    assert isinstance(shared.guard_slots(), LocalGuardState)
    assert isinstance(shared.answers(ttl_s=60, replica="here:1:1", alive=_judge), LocalAnswers)
    assert isinstance(shared.episode_rows(ttl_s=60), LocalEpisodeRows)
    leases, claims = shared.replicas(lease_s=15, claims_ttl_s=60)
    assert isinstance(leases, LocalReplicaLeases) and isinstance(claims, LocalBackendClaims)
    assert shared.shadow_stream() is None and shared.shadow_work("runner", lambda stream: "queue") == "runner"
    assert isinstance(shared.published_models(), LocalPublishedModels) and not shared.replicas_share_sessions
    assert location.name == "/cfg/.simroute/records.db"
    assert location.public_source() == {"store": "sqlite", "path": "/cfg/.simroute/records.db"}


def test_a_redis_store_shares_every_kind_through_redis():
    location = parse_config(REDIS, base_dir=Path("/cfg")).store_location
    store = location.open_store()
    shared = location.shared_state(store)
    assert (location.shared, shared.shared, repr(store)) == (True, True, "RedisStore(cache.internal:6380/2)")
    assert isinstance(shared.session_state(ttl_s=60), RedisSessionState)
    assert isinstance(shared.guard_slots(), RedisGuardState)
    assert shared.shadow_work("runner", lambda stream: stream) is not None and shared.replicas_share_sessions
    for kind in (
        shared.shadow_stream(),
        shared.published_models(),
        shared.answers(ttl_s=60, replica="here:1:1", alive=_judge),
        shared.episode_rows(ttl_s=60),
        *shared.replicas(lease_s=15, claims_ttl_s=60),
    ):
        assert kind is not None and kind.store is store
    assert location.exists()  # a server: asked when opened
    assert location.spool_path == Path("/cfg/.simroute/redis-cache.internal-6380-2.spool.jsonl")
    assert location.public_source() == {"store": "redis", "url": "redis://cache.internal:6380/2"}  # never the password


def test_a_sqlite_store_exists_once_its_file_does(tmp_path):
    location = parse_config(SQLITE, base_dir=tmp_path).store_location
    assert not location.exists()
    location.store_path.parent.mkdir()
    location.store_path.touch()
    assert location.exists()


def lines_matching(pattern: re.Pattern[str], *, outside: str) -> list[str]:
    """`path:line` of every product line matching `pattern`, outside the folder `outside`."""
    return [
        f"{path.relative_to(ROOT)}:{number}"
        for top in ("calls", "router", "shadow", "records", "backends", "policies", "simroute")
        for path in sorted((ROOT / top).rglob("*.py"))
        if outside not in path.as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]


def test_no_part_outside_the_room_asks_whether_the_store_is_redis():
    """`store.redis_url` is read where the location is built (config/root.py) and in
    messages that print it; no other part branches on it."""
    asks = re.compile(r"redis_url\s+is(\s+not)?\s+None|redis_url\s+or\b|\bif\s+[\w.]*redis_url\b")
    assert lines_matching(asks, outside="records/shared_state") == []


def test_nothing_outside_the_redis_store_reaches_its_private_helpers():
    reach = re.compile(r"\bstore\._(key|run|bodies|command|client)\b")
    assert lines_matching(reach, outside="store/redis") == []


def test_no_room_above_records_issues_redis_commands():
    """The Redis client, the Redis store and its errors are used in records/ only (the
    config's check of a Redis URL reads the store's parser)."""
    client = re.compile(r"^\s*(import redis|from redis)|RedisStore|REDIS_ERRORS|\.x(add|len|range|readgroup|ack|del)\(")
    assert lines_matching(client, outside="/records/") == []


async def test_one_router_has_nothing_published_to_follow_and_every_claim_is_its_own(tmp_path):
    shared = SharedState(None, shared=False)
    checks = []

    async def check() -> None:
        checks.append(1)

    await shared.published_models().follow(check, poll_s=0.01)  # returns at once
    model = tmp_path / "router.skops"
    model.write_bytes(b"model")
    before = model.stat().st_mtime_ns
    os.utime(model, ns=(before - 10**9, before - 10**9))
    assert await shared.published_models().publish(model, b"model", "d1") is False  # touched: the router watches it
    assert model.stat().st_mtime_ns > before - 10**9 and checks == []
    leases, claims = shared.replicas(lease_s=15, claims_ttl_s=60)
    assert await claims.claim("s", "shell", "here:1:1") == "here:1:1" and not leases.renews
    is_alive, owns = await leases.judges("here:1:1", containers=True)
    assert is_alive("elsewhere:1:1") and owns("elsewhere:1:1")  # no leases: another host's owner is never judged
