"""A model runner that can be replaced while the router runs (an adopted world model,
router/runtime/world_model_adoption.py): the simulator holds this one, and each call
goes to the runner current when it starts. `swap` loads the new runner first (off
the call path), then replaces the current one between calls; the old one is closed
once the calls it was answering have ended, so an in-flight call finishes on the
model it started on."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from backends.world_model.model_runner import Completion, ModelRunner


class SwappableRunner:
    def __init__(self, runner: ModelRunner) -> None:
        self.current = runner
        self._in_flight: dict[int, int] = {}  # calls per runner (by identity) not ended yet
        self._idle = asyncio.Condition()

    @property
    def model_name(self) -> str | None:
        return getattr(self.current, "model_name", None)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.current, name)

    async def start(self) -> None:
        await self.current.start()

    def count_tokens(self, text: str) -> int:
        return self.current.count_tokens(text)

    async def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> Completion:
        return await self._on_current(lambda runner: runner.complete(messages, **kwargs))

    async def read_ahead(self, messages: list[dict[str, Any]], *, deadline_s: float = 120.0) -> int:
        return await self._on_current(lambda runner: runner.read_ahead(messages, deadline_s=deadline_s))

    def replace(self, runner: ModelRunner) -> None:
        """Before the first call (the router starting): use `runner` instead, unloaded."""
        self.current = runner

    async def swap(self, runner: ModelRunner) -> None:
        """Load `runner`, make it the current one, and close the old one once its calls
        have ended. A runner that fails to load raises here and changes nothing."""
        await runner.start()
        old, self.current = self.current, runner
        async with self._idle:
            await self._idle.wait_for(lambda: not self._in_flight.get(id(old)))
        await old.aclose()

    async def aclose(self) -> None:
        await self.current.aclose()

    async def _on_current[T](self, work: Callable[[Any], Awaitable[T]]) -> T:
        runner = self.current
        key = id(runner)
        self._in_flight[key] = self._in_flight.get(key, 0) + 1
        try:
            return await work(runner)
        finally:
            self._in_flight[key] -= 1
            if not self._in_flight[key]:
                del self._in_flight[key]
                async with self._idle:
                    self._idle.notify_all()
