"""A GGUF world model run in-process with llama-cpp-python.

- One `Llama` object never serves two calls at once: each has a lock, and its
  work runs in a worker thread.
- Deadlines stop work: the prompt is evaluated in batches with a deadline check
  between them, and a stopping criterion ends generation at the deadline, so the
  object is free for the next call right after. A cancelled call (the agent hung
  up, shutdown) sets a flag the same checks read, and keeps the locks until its
  worker thread has stopped: the object is never used by two threads at once.
- Per-session prefix reuse: a small pool of contexts (weights are memory-mapped
  and shared); an agent session keeps using the context that holds its prefix, so
  step N evaluates only the tokens added since step N-1, even with other sessions
  interleaved. A new session takes the least recently used context, whose cached
  system prompt it usually shares.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import itertools
import json
import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from backends.world_model.engine import Completion, ContextOverflow, ModelUnavailable, WorldModelError, WorldModelTimeout


@dataclass
class _Context:
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


class LlamaCppEngine:
    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        seed: int = 0,
        temperature: float = 0.6,
        top_p: float = 0.95,
        top_k: int = 20,
        cached_sessions: int = 4,
        n_batch: int = 128,  # the deadline is checked between batches of prompt evaluation
        prefill: str = "",
    ) -> None:
        self.model_path = Path(model_path).expanduser()
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 2
        self.seed = seed
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.cached_sessions = max(1, cached_sessions)
        self.n_batch = n_batch
        # Text the answer starts with (e.g. the observation marker): small models
        # that do not think then continue with the observation itself.
        self.prefill = prefill
        self._contexts: list[_Context] = []
        self._by_session: OrderedDict[str, _Context] = OrderedDict()
        self._start_lock = asyncio.Lock()
        self._bind_lock = asyncio.Lock()
        # One computation at a time across contexts: each already uses every core,
        # and llama.cpp's threads spin, so two at once are slower than two in turn.
        # The agent's own calls go before background (shadow) work.
        self._compute = _PriorityLock()

    async def start(self) -> None:
        async with self._start_lock:
            if self._contexts:
                return
            if not self.model_path.is_file():
                raise ModelUnavailable(f"world model file not found: {self.model_path} (scripts/setup.sh installs the default model)")
            first = await anyio.to_thread.run_sync(self._load)
            self._contexts.append(first)

    def _load(self) -> _Context:
        import llama_cpp
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        try:
            llama = Llama(
                model_path=str(self.model_path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_batch=self.n_batch,
                seed=self.seed,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelUnavailable(f"cannot load world model {self.model_path}: {exc}") from exc
        template = llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise ModelUnavailable(f"{self.model_path} has no chat template in its metadata")
        eos = llama.detokenize([llama.token_eos()], special=True).decode(errors="ignore")
        bos = llama.detokenize([llama.token_bos()], special=True).decode(errors="ignore")
        context = _Context(llama=llama, formatter=Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos))
        context.abort_callback = llama_cpp.ggml_abort_callback(lambda _data: context.should_stop())
        llama_cpp.llama_set_abort_callback(llama.ctx, context.abort_callback, None)
        return context

    def count_tokens(self, text: str) -> int:
        if not self._contexts:
            return len(text) // 3
        return len(self._contexts[0].llama.tokenize(text.encode(), add_bos=False, special=True))

    async def _context_for(self, session_id: str) -> _Context:
        """The context holding this session's prefix, or a fresh/LRU one for it."""
        context = self._by_session.get(session_id)
        if context is not None and context.session_id == session_id:
            self._by_session.move_to_end(session_id)
            return context
        async with self._bind_lock:  # two new sessions must not both load a context past the limit
            context = self._by_session.get(session_id)
            if context is not None and context.session_id == session_id:
                return context
            unbound = [c for c in self._contexts if c.session_id is None]
            if unbound:
                context = unbound[0]
            elif len(self._contexts) < self.cached_sessions:
                context = await anyio.to_thread.run_sync(self._load)
                self._contexts.append(context)
            else:
                # The least recently used, preferring one not busy with another session's call.
                context = min(self._contexts, key=lambda c: (c.lock.locked(), c.last_used))
            if context.session_id is not None:
                self._by_session.pop(context.session_id, None)
            context.session_id = session_id
            self._by_session[session_id] = context
            return context

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        session_id: str,
        deadline_s: float,
        max_tokens: int,
        json_schema: dict[str, Any] | None = None,
        background: bool = False,
    ) -> Completion:
        await self.start()  # model loading is not charged to the deadline
        context = await self._context_for(session_id)  # nor is loading another context
        started = time.monotonic()
        deadline = started + deadline_s
        try:
            with anyio.fail_after(max(0.0, deadline - time.monotonic())):
                await context.lock.acquire()
                try:
                    await self._compute.acquire(priority=1 if background else 0)
                except BaseException:
                    context.lock.release()
                    raise
        except TimeoutError as exc:
            raise WorldModelTimeout(f"world model busy: not free within the {deadline_s:g}s deadline") from exc
        try:
            context.last_used = time.monotonic()
            context.cancelled.clear()
            context.stop_at = deadline
            work = functools.partial(self._complete_sync, context, messages, deadline, deadline_s, max_tokens, json_schema)
            return await _run_to_the_end(work, context.cancelled)
        finally:
            context.last_used = time.monotonic()
            self._compute.release()
            context.lock.release()

    def _complete_sync(
        self,
        context: _Context,
        messages: list[dict[str, Any]],
        deadline: float,
        deadline_s: float,
        max_tokens: int,
        json_schema: dict[str, Any] | None,
    ) -> Completion:
        from llama_cpp import StoppingCriteriaList

        started = time.monotonic()
        llama = context.llama
        formatted = context.formatter(messages=messages)
        tokens = llama.tokenize((formatted.prompt + self.prefill).encode(), add_bos=False, special=True)
        if len(tokens) + max_tokens > self.n_ctx:
            raise ContextOverflow(
                f"prompt of {len(tokens)} tokens + {max_tokens} to generate exceeds the world model's context of {self.n_ctx}"
            )
        # Before any evaluation: an unusable schema costs nothing.
        grammar = None if json_schema is None else _grammar_for(json.dumps(json_schema, sort_keys=True))
        try:
            evaluated = self._prefill(llama, tokens, deadline, deadline_s, context.cancelled)
        except WorldModelError:
            raise
        except RuntimeError as exc:  # llama_decode failed: aborted (deadline, cancel), or out of KV cells
            self._raise_stopped(context, deadline_s, "reading the prompt")
            raise WorldModelError(f"world model failed while reading the prompt: {exc}") from exc

        def past_deadline(input_ids: Any, logits: Any) -> bool:
            return context.should_stop()

        stop = [s for s in ([formatted.stop] if isinstance(formatted.stop, str) else (formatted.stop or []))]
        try:
            result = llama.create_completion(
                prompt=tokens,
                max_tokens=max_tokens,
                temperature=self.temperature,
                top_p=self.top_p,
                top_k=self.top_k,
                seed=self.seed,
                stop=stop or None,
                grammar=grammar,
                stopping_criteria=StoppingCriteriaList([past_deadline]),
            )
        except RuntimeError as exc:
            self._raise_stopped(context, deadline_s, "generating")
            raise WorldModelError(f"world model failed while generating: {exc}") from exc
        self._raise_stopped(context, deadline_s, "generating")
        choice = result["choices"][0]
        usage = result.get("usage", {})
        return Completion(
            text=choice["text"],
            prompt_tokens=len(tokens),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            evaluated_tokens=evaluated,
            latency_s=time.monotonic() - started,
            finish_reason=str(choice.get("finish_reason")),
        )

    @staticmethod
    def _raise_stopped(context: _Context, deadline_s: float, doing: str) -> None:
        if context.cancelled.is_set():
            raise _Cancelled
        if time.monotonic() >= context.stop_at:
            raise WorldModelTimeout(f"world model did not finish within its {deadline_s:g}s deadline (stopped while {doing})")

    def _prefill(self, llama: Any, tokens: list[int], deadline: float, deadline_s: float, cancelled: threading.Event) -> int:
        """Evaluate the prompt past the cached prefix, in batches, checking the
        deadline between them. Leaves the last token for generation (which needs
        fresh logits). Returns how many prompt tokens were evaluated."""
        cached = llama.input_ids[: llama.n_tokens].tolist()
        prefix = 0
        for a, b in zip(cached, tokens):
            if a != b:
                break
            prefix += 1
        prefix = min(prefix, len(tokens) - 1)
        llama.n_tokens = prefix  # eval() drops the KV cells past n_tokens
        pending = tokens[prefix:-1]
        for start in range(0, len(pending), self.n_batch):
            if cancelled.is_set():
                raise _Cancelled
            if time.monotonic() >= deadline:
                raise WorldModelTimeout(f"world model did not finish reading the prompt within its {deadline_s:g}s deadline")
            llama.eval(pending[start : start + self.n_batch])
        return len(tokens) - prefix

    async def aclose(self) -> None:
        contexts, self._contexts = self._contexts, []
        self._by_session.clear()
        for context in contexts:
            async with context.lock:
                context.llama.close()


class _Cancelled(Exception):
    """The worker stopped early because its caller was cancelled."""


async def _run_to_the_end(work: Any, cancelled: threading.Event) -> Completion:
    """Run `work` in a worker thread and return its result. If the caller is
    cancelled (an anyio scope, or a plain `task.cancel()`, which anyio's thread
    shielding does not hold back), set `cancelled` and wait for the thread to stop
    before letting the cancellation through: the caller's locks guard the Llama
    object the thread is still using, and releasing them early lets a second
    thread into it (a GGML assertion or a segfault)."""
    worker = asyncio.ensure_future(anyio.to_thread.run_sync(work))
    try:
        return await asyncio.shield(worker)
    except asyncio.CancelledError:
        cancelled.set()  # read by the abort callback and the stopping criterion: stops within one graph node
        while not worker.done():
            try:
                await asyncio.wait({worker})
            except asyncio.CancelledError:
                continue  # cancelled again while waiting: the thread still has to stop
        if not worker.cancelled():
            worker.exception()  # retrieved: the caller is gone, its cancellation is what counts
        raise


@functools.lru_cache(maxsize=64)
def _grammar_for(schema_json: str) -> Any:
    """Compiling a schema's grammar takes milliseconds; a tool's schema rarely changes.
    llama.cpp's converter rejects some JSON Schema keywords (`not`, remote `$ref`)
    with an AssertionError; that becomes a WorldModelError naming the cause."""
    from llama_cpp import LlamaGrammar

    try:
        return LlamaGrammar.from_json_schema(schema_json, verbose=False)
    except (AssertionError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise WorldModelError(f"the tool's output schema cannot be turned into a generation grammar: {exc}") from exc


class _PriorityLock:
    """A lock whose waiters are served lowest priority number first, then in order."""

    def __init__(self) -> None:
        self._busy = False
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    async def acquire(self, *, priority: int = 0) -> None:
        if not self._busy and not self._waiters:
            self._busy = True
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (priority, next(self._order), granted))
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self.release()  # granted just as we were cancelled: pass it on
            raise

    def release(self) -> None:
        while self._waiters:
            _, _, granted = heapq.heappop(self._waiters)
            if not granted.done():
                granted.set_result(None)  # ownership passes on; stays busy
                return
        self._busy = False
