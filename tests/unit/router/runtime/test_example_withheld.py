"""The example lookup withholds the held-out sessions of `simroute compare-models`:
their answers are never shown, and the training side still fills the cap."""

from __future__ import annotations

import asyncio

from kit.calls import make_call
from kit.export import fill_store

from calls import call_key
from records.store.sqlite.store import SQLiteStore
from router.runtime.example_lookup import ExampleLookup


async def rows_for(store, call, *, withheld=None, limit=4) -> list[dict]:
    lookup = ExampleLookup(store, limit=limit)
    lookup.call_key_of = lambda c: call_key(c.channel, c.server, c.tool, c.arguments)
    lookup.withheld = withheld
    lookup.loop = asyncio.get_running_loop()
    await lookup.prefetch(call)
    return lookup(call)


def test_withheld_sessions_are_never_shown_and_the_cap_still_fills(tmp_path):
    async def main():
        store = await SQLiteStore(tmp_path / "records.db").open()
        try:
            await fill_store(store, 400)  # 40 sessions of weather calls, s00000000…s00000039
            call = make_call("alerts", server="weather", session="s00000039")
            everything = await rows_for(store, call)
            newest = {row["session"] for row in everything}
            assert len(everything) == 4 and newest  # without an exclusion: the newest sessions
            held_out = newest | {"s00000037", "s00000038"}
            shown = await rows_for(store, call, withheld=lambda session: session in held_out)
            assert len(shown) == 4  # the cap filled from the training side
            assert not {row["session"] for row in shown} & held_out
            everyone = await rows_for(store, call, withheld=lambda session: True)
            assert everyone == []
        finally:
            await store.aclose()

    asyncio.run(main())
