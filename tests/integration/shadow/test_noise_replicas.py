"""The noise model with two `simroute mcp --http` router processes on one real Redis:
a value another replica changed between two reads is state, never noise.

Each replica runs its own toolbox server; they share one account (a file), so a
deposit through replica B changes the balance replica A reads. A's own epoch never
sees B's calls: only the records in the shared store tell A's learner about them.
"""

from __future__ import annotations

import asyncio

import pytest
from fastmcp import Client
from kit.launch import notes_server, toolbox_server

from records.store.redis.store import RedisStore

pytestmark = pytest.mark.integration

BALANCE, VERSION = "toolbox.get_balance", "notes.version"  # VERSION: the same answer every time


async def learned(redis_url: str) -> dict[str, tuple[int, dict[str, int]]]:
    """The store's noise table: per tool ("server.tool"), pairs and disagreements per path,
    once A's learner has handled every pair (VERSION's third pair is queued last)."""
    store = await RedisStore(redis_url).open()  # the prefix the routers use
    try:
        for _ in range(100):
            table = {name: (stats.pairs, stats.disagreements) for _, name, stats in await store.noise_table()}
            if table.get(VERSION, (0, {}))[0] == 3:
                return table
            await asyncio.sleep(0.1)
        raise AssertionError(f"replica A learned no {VERSION} pairs: {table}")
    finally:
        await store.aclose()


async def read_balance_four_times(a, b, *, between) -> list[str]:
    """Replica A reads the balance (and the notes server's version) four times; `between`
    runs after each of the first three rounds."""
    seen = []
    async with Client(a.url) as on_a, Client(b.url) as on_b:
        for round_ in range(4):
            seen.append((await on_a.call_tool("toolbox_get_balance", {})).content[0].text)
            await on_a.call_tool("notes_version", {})
            if round_ < 3:
                await between(on_b)
    return seen


def replicas(make_config, simroute_http, redis_server, tmp_path):
    config = make_config(
        mcpServers={"toolbox": toolbox_server(TOOLBOX_BALANCE=str(tmp_path / "balance")), "notes": notes_server()},
        store={"url": redis_server.url},
    )
    return simroute_http(config), simroute_http(config)


async def test_a_value_another_replica_changed_between_two_reads_is_not_learned_as_noise(
    make_config, simroute_http, redis_server, tmp_path
):
    a, b = replicas(make_config, simroute_http, redis_server, tmp_path)

    async def deposit_on_b(on_b) -> None:
        await on_b.call_tool("toolbox_add_funds", {"amount": 10})

    seen = await read_balance_four_times(a, b, between=deposit_on_b)
    assert seen == ["balance 0", "balance 10", "balance 20", "balance 30"]  # not a counter step: a changed value
    table = await learned(redis_server.url)
    assert BALANCE not in table, table  # every pair had B's write in between: none is evidence
    assert table[VERSION] == (3, {})  # another server's pairs are learned as before


async def test_the_same_reads_without_a_write_by_another_replica_teach_the_table(
    make_config, simroute_http, redis_server, tmp_path
):
    """The same answers, changed by hand outside simroute (no router records a write), while
    replica B only reads the same server: the pairs are learned and the path is noise.
    (A change no router made is invisible to every router: see the README.)"""
    a, b = replicas(make_config, simroute_http, redis_server, tmp_path)
    balance = tmp_path / "balance"

    async def read_on_b_and_change_by_hand(on_b) -> None:
        await on_b.call_tool("toolbox_get_balance", {})  # another replica's read of the server: no write
        balance.write_text(str(int(balance.read_text() or 0) + 10) if balance.exists() else "10")

    seen = await read_balance_four_times(a, b, between=read_on_b_and_change_by_hand)
    assert seen == ["balance 0", "balance 10", "balance 20", "balance 30"]
    table = await learned(redis_server.url)
    pairs, disagreements = table[BALANCE]
    assert pairs >= 3 and list(disagreements.values()) == [pairs], (
        table
    )  # B's reads pair up too; every pair disagreed at one path
