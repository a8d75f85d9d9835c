"""The in-process model runner's per-session state: a small pool of llama.cpp contexts,
and the model state saved after each system prompt.

- Per-session prefix reuse: the weights are memory-mapped and shared, each
  context holds one session's tokens; a session keeps using the context that
  holds its prefix, so step N evaluates only the tokens added since step N-1,
  even with other sessions interleaved. A new session takes an unbound context,
  a new one while the pool is below its size, else the least recently used.
- Shared system prompt: the model state right after a system prompt (the tool
  list, the task) is saved once per system prompt and loaded into any context
  that starts a session with the same one, so a session's first step reads only
  its own turns.
- Deadlines stop prompt evaluation: it runs in batches with a deadline check
  between them (and llama.cpp's abort callback reads `should_stop` within one).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from backends.world_model.model_access import Cancelled
from backends.world_model.model_runner import WorldModelTimeout


@dataclass
class LlamaContext:
    llama: Any
    formatter: Any
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    session_id: str | None = None
    last_used: float = 0.0
    # Read by llama.cpp's abort callback between graph nodes, so a deadline or a
    # cancellation stops even one long prompt batch, not only between tokens.
    stop_at: float = float("inf")
    cancelled: threading.Event = field(default_factory=threading.Event)
    abort_callback: Any = None  # kept referenced: llama.cpp holds only a C pointer to it

    def should_stop(self) -> bool:
        return self.cancelled.is_set() or time.monotonic() >= self.stop_at


class ContextPool:
    """Up to `size` contexts, each bound to the session whose prefix it holds.
    `load` makes a context (blocking: run in a worker thread)."""

    def __init__(self, load: Callable[[], LlamaContext], size: int) -> None:
        self.load = load
        self.size = max(1, size)
        self.contexts: list[LlamaContext] = []
        self._by_session: OrderedDict[str, LlamaContext] = OrderedDict()
        self._bind_lock = asyncio.Lock()

    async def for_session(self, session_id: str) -> LlamaContext:
        """The context holding this session's prefix, or a fresh/LRU one for it."""
        context = self._by_session.get(session_id)
        if context is not None and context.session_id == session_id:
            self._by_session.move_to_end(session_id)
            return context
        async with self._bind_lock:  # two new sessions must not both load a context past the limit
            context = self._by_session.get(session_id)
            if context is not None and context.session_id == session_id:
                return context
            unbound = [c for c in self.contexts if c.session_id is None]
            if unbound:
                context = unbound[0]
            elif len(self.contexts) < self.size:
                context = await anyio.to_thread.run_sync(self.load)
                self.contexts.append(context)
            else:
                # The least recently used, preferring one not busy with another session's call.
                context = min(self.contexts, key=lambda c: (c.lock.locked(), c.last_used))
            if context.session_id is not None:
                self._by_session.pop(context.session_id, None)
            context.session_id = session_id
            self._by_session[session_id] = context
            return context

    def unbind(self, session_id: str) -> None:
        """Leave the session's context for any new session to take."""
        context = self._by_session.pop(session_id, None)
        if context is not None and context.session_id == session_id:
            context.session_id = None

    def take_all(self) -> list[LlamaContext]:
        """Every context, the pool left empty (for closing)."""
        contexts, self.contexts = self.contexts, []
        self._by_session.clear()
        return contexts


class SystemStates:
    """Model states saved right after a system prompt, the `keep` latest (0: off).
    Used under the model runner's one-computation-at-a-time lock only."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        # Token prefix digest -> (its length, the state)
        self._states: OrderedDict[int, tuple[int, Any]] = OrderedDict()

    def system_prompt_end(self, llama: Any, prompt: str, messages: list[dict[str, Any]], tokens: list[int]) -> int:
        """How many leading prompt tokens are the system prompt (0: none worth sharing)."""
        if not self.keep or not messages or messages[0].get("role") != "system":
            return 0
        content = str(messages[0].get("content") or "")
        at = prompt.find(content)
        if at < 0 or not content:
            return 0
        head = llama.tokenize(prompt[: at + len(content)].encode(), add_bos=False, special=True)
        end = common_prefix(head, tokens) - 1  # the last token may merge with what follows
        return end if end >= 32 else 0

    def prefill(
        self,
        llama: Any,
        tokens: list[int],
        *,
        n_batch: int,
        deadline: float,
        deadline_s: float,
        cancelled: threading.Event,
        system_end: int = 0,
    ) -> int:
        """Evaluate the prompt past the cached prefix, in batches of `n_batch`,
        checking the deadline between them. Leaves the last token for generation
        (which needs fresh logits). Returns how many prompt tokens were evaluated.

        A context that does not hold the system prompt loads its saved state
        when there is one, and else saves it once evaluated."""
        prefix = min(common_prefix(llama.input_ids[: llama.n_tokens].tolist(), tokens), len(tokens) - 1)
        key = hash(tuple(tokens[:system_end])) if system_end else None
        if key is not None and prefix < system_end and key in self._states:
            llama.load_state(self._states[key][1])
            self._states.move_to_end(key)
            prefix = system_end
        save_at = system_end if key is not None and prefix < system_end and key not in self._states else None
        llama.n_tokens = prefix  # eval() drops the KV cells past n_tokens
        pending = tokens[prefix:-1]
        position = prefix
        while pending:
            if cancelled.is_set():
                raise Cancelled
            if time.monotonic() >= deadline:
                raise WorldModelTimeout(
                    f"world model did not finish reading the prompt within its {deadline_s:g}s deadline"
                )
            take = min(n_batch, save_at - position) if save_at is not None and position < save_at else n_batch
            llama.eval(pending[:take])
            pending, position = pending[take:], position + take
            if key is not None and save_at is not None and position == save_at:
                self._states[key] = (save_at, llama.save_state())
                while len(self._states) > self.keep:
                    self._states.popitem(last=False)
                save_at = None
        return len(tokens) - prefix


def common_prefix(a: list[int], b: list[int]) -> int:
    """How many leading tokens `a` and `b` share."""
    n = 0
    for x, y in zip(a, b, strict=False):  # of different lengths: the shorter one ends the prefix
        if x != y:
            break
        n += 1
    return n
