"""An event loop on a thread of its own, for synchronous callers of asyncio code.

gymnasium's API is synchronous and simroute's runtime and HTTP client are asyncio. A
`simroute.Env` cannot use `asyncio.run` per call (the runtime's sessions, upstream
processes and background tasks live across calls, on one loop), nor the caller's loop
(a training script may already run one, e.g. in a notebook). So each Env runs its loop
here and waits on every call."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any


class BackgroundLoop:
    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        # A daemon: an Env a script forgot to close does not keep the interpreter alive.
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()
        self._closed = False

    def run[T](self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Runs `coroutine` on the loop and waits for its result (or exception)."""
        if self._closed:
            coroutine.close()
            raise RuntimeError("simroute: this environment is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def close(self) -> None:
        """Cancels what still runs on the loop, then stops it and its thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        asyncio.run_coroutine_threadsafe(self._cancel_the_rest(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    @staticmethod
    async def _cancel_the_rest() -> None:
        loop = asyncio.get_running_loop()
        others = [task for task in asyncio.all_tasks(loop) if task is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
        await loop.shutdown_asyncgens()
        await loop.shutdown_default_executor()
