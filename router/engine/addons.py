"""The call-addon contract: how a per-call feature plugs into the engine.

Like a mitmproxy addon (or a fastmcp middleware), an addon implements the hooks it
needs, each named after the event, and the engine calls every addon that implements
a hook, in list order (`after_real` in reverse: it closes what `before_real` opened):

- `load(engine)`: once, when the engine is built; the addon keeps what it needs of it
  (session state, the sim route, the redactor: read when used, they may change).
- `decided(pending)`: the policies chose the route; nothing has run yet. May replace
  `pending.decision` (a virtual server's call never goes real) and keep per-call state
  in `pending.metadata` under keys of its own.
- `route(pending)`: before the route runs. May answer instead of it (a perturbation's
  fault, a page kept in session state); the first answer wins and no route runs.
- `before_real(pending, deadline_s)`: the real side is about to be asked (by the
  engine, or by a front door that sends the request itself, the HTTP proxy). May
  answer instead (the upstream guard's refusal): nothing is then sent.
- `sending(pending, record)`: a call that may change the real world is about to be
  sent; `record` is its write-ahead record (status `started`).
- `after_real(pending, observation, outcome)`: the real side answered, failed or was
  never reached (`observation` None); told to every addon whose `before_real` ran.
- `answered(pending, observation)`: the route's answer; returns what the agent gets
  (the same object, or a changed one: an answer-changing perturbation). Sets
  `pending.status` and `pending.route_note` when it changes what the record says.
- `finished(pending, record)`: the call ended, however it ended; `record` is what the
  agent gets, as stored (secrets redacted). The agent sees the answer next.
- `repeatable(pending, record, again)`: a finished call the front door can send again
  off the agent's path (`again`); an addon that uses it returns True.
- `aclose()`: the engine's owner is closing.

Failure rules. The record writer is always first (the engine puts it there): a
`RecordError` from its `sending` keeps the call from going real, from its `finished`
withholds the answer (`pending.withheld`). Any other addon must not raise: one that
does is logged and skipped for that event, and the call goes on as if the hook did
nothing; a failing `route` or `before_real` answers with an error observation (the
engine's boundary), so nothing reaches the real world past a broken check.
Addons import this contract (and `Pending`), never each other.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from calls import Observation
from records.record import Record
from records.store.protocol import RecordError
from router.engine.parts import EngineParts
from router.engine.pending import Pending
from router.engine.real_calls import RealOutcome

log = logging.getLogger("simroute.engine")

Again = Callable[[], Awaitable[Observation]]
HOOKS = (
    "load",
    "decided",
    "route",
    "before_real",
    "sending",
    "after_real",
    "answered",
    "finished",
    "repeatable",
    "aclose",
)


class CallAddon:
    """The hooks, each doing nothing: an addon overrides those it needs (the engine
    calls only the overridden ones, so an unused hook costs nothing)."""

    def load(self, engine: EngineParts) -> None:
        return None

    async def decided(self, pending: Pending) -> None:
        return None

    async def route(self, pending: Pending) -> Observation | None:
        return None

    async def before_real(self, pending: Pending, deadline_s: float) -> Observation | None:
        return None

    async def sending(self, pending: Pending, record: Record) -> None:
        return None

    async def after_real(self, pending: Pending, observation: Observation | None, outcome: RealOutcome) -> None:
        return None

    async def answered(self, pending: Pending, observation: Observation) -> Observation:
        return observation

    async def finished(self, pending: Pending, record: Record) -> None:
        return None

    def repeatable(self, pending: Pending, record: Record, again: Again) -> bool:
        return False

    async def aclose(self) -> None:
        return None


class Addons:
    """The engine's addons in order, and each event told to those that hook it."""

    def __init__(self, addons: Iterable[CallAddon] = ()) -> None:
        self.all: list[CallAddon] = list(addons)
        self._engine: EngineParts | None = None
        self._hooks: dict[str, list[Any]] = {}
        self._index()

    def load(self, engine: EngineParts) -> None:
        self._engine = engine
        for addon in self.all:
            addon.load(engine)

    def add(self, addon: CallAddon, *, replace: bool = True) -> CallAddon:
        """Put `addon` in place of the addon of its type (`replace`), else at the end."""
        same = [i for i, a in enumerate(self.all) if type(a) is type(addon)] if replace else []
        if same:
            self.all[same[0]] = addon
        else:
            self.all.append(addon)
        if self._engine is not None:
            addon.load(self._engine)
        self._index()
        return addon

    def find[A: CallAddon](self, kind: type[A]) -> A | None:
        return next((a for a in self.all if isinstance(a, kind)), None)

    def _index(self) -> None:
        self._hooks = {
            hook: [getattr(a, hook) for a in self.all if getattr(type(a), hook) is not getattr(CallAddon, hook)]
            for hook in HOOKS
        }

    async def decided(self, pending: Pending) -> None:
        for hook in self._hooks["decided"]:
            try:
                await hook(pending)
            except Exception:
                log.exception("addon hook %s failed", hook.__qualname__)

    async def route(self, pending: Pending) -> Observation | None:
        for hook in self._hooks["route"]:  # raises: the engine answers with the route's error
            answer = await hook(pending)
            if answer is not None:
                return answer
        return None

    async def before_real(self, pending: Pending, deadline_s: float) -> Observation | None:
        """An answer instead of the real call (None: send it; the upstream guard's refusal:
        nothing is sent). The addons whose hook ran are kept in `pending`, to be told
        `after_real`. A hook that raises answers with an error: a broken check never
        lets the call through."""
        for hook in self._hooks["before_real"]:
            pending.entered.append(hook.__self__)
            try:
                answer = await hook(pending, deadline_s)
            except Exception as exc:
                log.exception("addon hook %s failed before the real side", hook.__qualname__)
                return Observation.error(
                    f"simroute: the check before the real side failed: {type(exc).__name__}: {exc}"
                )
            if answer is not None:
                return answer
        return None

    async def sending(self, pending: Pending, record: Record) -> None:
        for hook in self._hooks["sending"]:  # the record writer's RecordError goes up: fail closed
            await hook(pending, record)

    async def after_real(self, pending: Pending, observation: Observation | None, outcome: RealOutcome) -> None:
        entered, pending.entered = pending.entered, []
        for addon in reversed(entered):
            try:
                await addon.after_real(pending, observation, outcome)
            except Exception:
                log.exception("addon %s failed after the real call", type(addon).__name__)

    async def answered(self, pending: Pending, observation: Observation) -> Observation:
        for hook in self._hooks["answered"]:
            try:
                observation = await hook(pending, observation)
            except Exception:
                log.exception("addon hook %s failed", hook.__qualname__)
        return observation

    async def finished(self, pending: Pending, record: Record) -> RecordError | None:
        """Every addon told; the record writer's RecordError returned (the answer is then withheld)."""
        failed: RecordError | None = None
        for hook in self._hooks["finished"]:
            try:
                await hook(pending, record)
            except RecordError as exc:
                log.error("%s", exc)
                failed, pending.withheld = exc, True
            except Exception:
                log.exception("addon hook %s failed", hook.__qualname__)
        return failed

    def repeatable(self, pending: Pending, record: Record, again: Again) -> bool:
        return any(hook(pending, record, again) for hook in self._hooks["repeatable"])

    async def aclose(self) -> None:
        for hook in self._hooks["aclose"]:
            await hook()
