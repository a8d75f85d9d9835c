"""The tool-definition pins of the upstreams this router fronts (router/engine/tool_pin_checks.py
says why and what the policies do).

`PinGuard` reconciles every live listing with the pins in the record store (shared by
every replica), records the changes it finds, and holds the unaccepted ones in memory
for the policy chain: as a policy (`decide`) it answers the calls a change holds, with
no I/O. Pins are accepted out of process (`simroute pins accept`) or by another
replica, so the guard reads the pending changes back from the store at most every
`refresh_s` (`refresh`, awaited by the MCP front door before it routes a call); a
change accepted meanwhile makes its server's listing stale, so the next call lists
the accepted definition before it goes real.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from calls import Call, Decision, Session
from records.store.protocol import RecordStore, StoreError
from router.engine.tool_pin_checks import POLICY, Pin, PinPolicy, ToolChange, hold, reconcile

log = logging.getLogger("simroute.pins")


class PinGuard:
    name = POLICY

    def __init__(self, store: RecordStore, *, policy: PinPolicy = "warn", refresh_s: float = 1.0) -> None:
        self.store = store
        self.policy = policy
        self.refresh_s = refresh_s
        self._pending: dict[str, dict[str, ToolChange]] = {}  # server -> tool -> its unaccepted change
        self._read_at = float("-inf")
        # Servers whose tools must be listed again before their next call: they said their
        # tools changed (notifications/tools/list_changed), or a change of theirs was accepted.
        self.stale: set[str] = set()
        self.on_stale: list[Callable[[str], None]] = []  # told each server made stale (the provider drops its cache)

    # --- the policy: what a call gets while its server has unaccepted changes -------------

    def decide(self, call: Call, session: Session) -> Decision | None:
        if call.channel != "mcp" or self.policy == "warn":
            return None
        pending = self._pending.get(call.server)
        return hold(self.policy, call.server, call.tool, pending) if pending else None

    def pending(self, server: str) -> Mapping[str, ToolChange]:
        return self._pending.get(server, {})

    def note(self, server: str, tool: str) -> str:
        """The record's remark on a call of a tool with an unaccepted change under `warn`
        (under `block` and `rehearse` the decision's reason says it)."""
        change = self._pending.get(server, {}).get(tool) if self.policy == "warn" else None
        return f"{change.describe()}; not accepted (pins.policy warn)" if change is not None else ""

    def mark_stale(self, server: str) -> None:
        self.stale.add(server)
        for hook in self.on_stale:
            hook(server)

    # --- listings -----------------------------------------------------------------------

    async def reconcile(self, server: str, listed: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The definitions the agent is served for `server`'s live listing `listed`: new
        tools pinned, changes recorded, changed tools as pinned. Raises StoreError when the
        pins cannot be read or written (the caller then serves its last snapshot)."""
        self.stale.discard(server)
        pins = {pin.tool: pin for pin in map(Pin.from_row, await self.store.pins(server))}
        snapshot = self.store.tool_snapshot(server)
        if not pins and snapshot:
            # A store kept by a router without pins: what it last listed was first seen then.
            await self.store.add_pins([Pin.of(server, definition, ts=time.time()).to_row() for definition in snapshot])
            pins = {pin.tool: pin for pin in map(Pin.from_row, await self.store.pins(server))}
        result = reconcile(server, pins, listed, now=time.time())
        if result.first_seen:
            await self.store.add_pins([pin.to_row() for pin in result.first_seen])
            # Another replica may have pinned one of them first: its pin is the pin.
            pins = {pin.tool: pin for pin in map(Pin.from_row, await self.store.pins(server))}
            result = reconcile(server, pins, listed, now=time.time())
        for change in result.changes:
            if await self.store.add_pin_change(change.to_row()):
                log.warning("%s (pins.policy %s)\n%s", change.describe(), self.policy, change.diff)
        reverted = [tool for tool in result.as_pinned if tool in self._pending.get(server, {})]
        if reverted:  # listed as pinned again: nothing is left to accept
            await self.store.end_pin_changes(server, reverted, "reverted")
        await self.refresh(force=True)
        return result.served

    # --- the pending changes, as the store holds them ---------------------------------------

    async def refresh(self, *, force: bool = False) -> None:
        """Read the pending changes from the store (at most every `refresh_s` unless
        `force`). When the store cannot be read, the changes last read still hold."""
        if not force and time.monotonic() - self._read_at < self.refresh_s:
            return
        try:
            rows = await self.store.pin_changes(status="pending")
        except StoreError as exc:
            log.warning("tool pin changes not read (the last read still hold): %s", exc)
            return
        self._read_at = time.monotonic()
        pending: dict[str, dict[str, ToolChange]] = {}
        for row in rows:
            change = ToolChange.from_row(row)
            pending.setdefault(change.server, {})[change.tool] = change
        for server, changes in self._pending.items():
            if set(changes) - set(pending.get(server, {})):  # accepted (or reverted) elsewhere
                self.mark_stale(server)
        self._pending = pending
