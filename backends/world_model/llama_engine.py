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
- Shared system prompt: the model state right after a system prompt (the tool
  list, the task) is saved once per system prompt and loaded into any context
  that starts a session with the same one, so a session's first step reads only
  its own turns.
- A grammar (GBNF from the domain, or an output schema) shapes the answer.
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

_read_aheads = itertools.count(1)


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
        chat_format: str | None = None,  # a llama-cpp-python registered format, for GGUF files without a chat template
        shared_system_states: int = 4,  # saved system-prompt states kept (0: off)
    ) -> None:
        self.model_path = Path(model_path).expanduser()
        self.n_ctx = n_ctx
        # Half the cores by default (physical cores on most machines): llama.cpp's threads spin
        # while they wait, and with every core taken they fight the router's own thread and
        # any other process; measured on a busy 2-core machine, 40 tokens took 31 s on 2
        # threads and 2 s on 1.
        self.n_threads = n_threads or max(1, (os.cpu_count() or 2) // 2)
        self.seed = seed
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.cached_sessions = max(1, cached_sessions)
        self.n_batch = n_batch
        # Text the answer starts with (e.g. the observation marker): small models
        # that do not think then continue with the observation itself.
        self.prefill = prefill
        self.chat_format = chat_format
        self.shared_system_states = shared_system_states
        # token prefix digest -> (its length, the saved model state after it); used under _compute only
        self._system_states: OrderedDict[int, tuple[int, Any]] = OrderedDict()
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
        if self.chat_format:
            formatter = _registered_formatter(self.chat_format)
        else:
            template = llama.metadata.get("tokenizer.chat_template")
            if not template:
                llama.close()
                raise ModelUnavailable(
                    f"{self.model_path} has no chat template in its metadata: set world_model.chat_format "
                    f"(one of llama-cpp-python's registered formats, e.g. chatml, llama-2, gemma)"
                )
            eos = llama.detokenize([llama.token_eos()], special=True).decode(errors="ignore")
            bos = llama.detokenize([llama.token_bos()], special=True).decode(errors="ignore")
            formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
        context = _Context(llama=llama, formatter=formatter)
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
        grammar: str | None = None,
        stop: list[str] | None = None,
        temperature: float | None = None,
        seed_offset: int = 0,
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
            sampling = _Sampling(json_schema, grammar, list(stop or []), self.temperature if temperature is None else temperature, self.seed + seed_offset)
            work = functools.partial(self._complete_sync, context, messages, deadline, deadline_s, max_tokens, sampling)
            return await _run_to_the_end(work, context.cancelled)
        finally:
            context.last_used = time.monotonic()
            self._compute.release()
            context.lock.release()

    async def read_ahead(self, messages: list[dict[str, Any]], *, deadline_s: float = 120.0) -> int:
        """Read the system prompt of `messages` now, at background priority, and keep
        the model state after it (see _prefill), so the first session that starts
        with it reads only its own turns. Returns the tokens read (0: nothing to keep).
        The context is left unbound: any new session may take it."""
        if not self.shared_system_states:
            return 0
        session_id = f"\0read-ahead-{next(_read_aheads)}"  # no agent's session id starts with NUL
        try:
            completion = await self.complete(messages, session_id=session_id, deadline_s=deadline_s, max_tokens=1, background=True)
        finally:
            context = self._by_session.pop(session_id, None)
            if context is not None and context.session_id == session_id:
                context.session_id = None
        return completion.evaluated_tokens

    def _complete_sync(
        self,
        context: _Context,
        messages: list[dict[str, Any]],
        deadline: float,
        deadline_s: float,
        max_tokens: int,
        sampling: _Sampling,
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
        # Before any evaluation: an unusable grammar costs nothing.
        if sampling.grammar is not None:
            grammar = _gbnf_grammar(sampling.grammar)
            check_grammar(llama, sampling.grammar)
        elif sampling.json_schema is not None:
            grammar = _grammar_for(json.dumps(sampling.json_schema, sort_keys=True))
        else:
            grammar = None
        system_end = self._system_prompt_end(llama, formatted.prompt, messages, tokens)
        try:
            evaluated = self._prefill(llama, tokens, deadline, deadline_s, context.cancelled, system_end)
        except WorldModelError:
            raise
        except RuntimeError as exc:  # llama_decode failed: aborted (deadline, cancel), or out of KV cells
            self._raise_stopped(context, deadline_s, "reading the prompt")
            raise WorldModelError(f"world model failed while reading the prompt: {exc}") from exc

        def past_deadline(input_ids: Any, logits: Any) -> bool:
            return context.should_stop()

        stop = [s for s in ([formatted.stop] if isinstance(formatted.stop, str) else (formatted.stop or []))] + sampling.stop
        try:
            result = llama.create_completion(
                prompt=tokens,
                max_tokens=max_tokens,
                temperature=sampling.temperature,
                top_p=self.top_p,
                top_k=self.top_k,
                seed=sampling.seed,
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

    def _system_prompt_end(self, llama: Any, prompt: str, messages: list[dict[str, Any]], tokens: list[int]) -> int:
        """How many leading prompt tokens are the system prompt (0: none worth sharing)."""
        if not self.shared_system_states or not messages or messages[0].get("role") != "system":
            return 0
        content = str(messages[0].get("content") or "")
        at = prompt.find(content)
        if at < 0 or not content:
            return 0
        head = llama.tokenize(prompt[: at + len(content)].encode(), add_bos=False, special=True)
        end = _common_prefix(head, tokens) - 1  # the last token may merge with what follows
        return end if end >= 32 else 0

    def _prefill(
        self, llama: Any, tokens: list[int], deadline: float, deadline_s: float, cancelled: threading.Event, system_end: int = 0
    ) -> int:
        """Evaluate the prompt past the cached prefix, in batches, checking the
        deadline between them. Leaves the last token for generation (which needs
        fresh logits). Returns how many prompt tokens were evaluated.

        A context that does not hold the system prompt loads its saved state
        when there is one, and else saves it once evaluated."""
        prefix = min(_common_prefix(llama.input_ids[: llama.n_tokens].tolist(), tokens), len(tokens) - 1)
        key = hash(tuple(tokens[:system_end])) if system_end else None
        if key is not None and prefix < system_end and key in self._system_states:
            llama.load_state(self._system_states[key][1])
            self._system_states.move_to_end(key)
            prefix = system_end
        save_at = system_end if key is not None and prefix < system_end and key not in self._system_states else None
        llama.n_tokens = prefix  # eval() drops the KV cells past n_tokens
        pending = tokens[prefix:-1]
        position = prefix
        step = self.n_batch
        while pending:
            if cancelled.is_set():
                raise _Cancelled
            if time.monotonic() >= deadline:
                raise WorldModelTimeout(f"world model did not finish reading the prompt within its {deadline_s:g}s deadline")
            take = min(step, save_at - position) if save_at is not None and position < save_at else step
            llama.eval(pending[:take])
            pending, position = pending[take:], position + take
            if save_at is not None and position == save_at:
                self._system_states[key] = (save_at, llama.save_state())
                while len(self._system_states) > self.shared_system_states:
                    self._system_states.popitem(last=False)
                save_at = None
        return len(tokens) - prefix

    async def aclose(self) -> None:
        contexts, self._contexts = self._contexts, []
        self._by_session.clear()
        for context in contexts:
            async with context.lock:
                context.llama.close()


@dataclass(frozen=True, slots=True)
class _Sampling:
    json_schema: dict[str, Any] | None
    grammar: str | None
    stop: list[str]
    temperature: float
    seed: int


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _registered_formatter(name: str) -> Any:
    """The chat formatter llama-cpp-python registered under `name` (its registry
    keeps completion handlers; the formatter is the handler's closure)."""
    import inspect

    from llama_cpp import llama_chat_format

    try:
        handler = llama_chat_format.get_chat_completion_handler(name)
    except llama_chat_format.LlamaChatCompletionHandlerNotFoundException as exc:
        raise ModelUnavailable(f"world_model.chat_format {name!r} is not a registered chat format: {exc}") from exc
    formatter = inspect.getclosurevars(handler).nonlocals.get("chat_formatter")
    if formatter is None:
        raise ModelUnavailable(f"world_model.chat_format {name!r} is a completion handler, not a plain chat format")
    return formatter if _keeps_system(formatter) else _SystemInFirstUserTurn(formatter)


_PROBE = "simroute-system-probe"


def _keeps_system(formatter: Any) -> bool:
    """Whether the format writes a system message into the prompt at all (some,
    e.g. llama-cpp-python's `gemma`, drop it without a word)."""
    prompt = formatter(messages=[{"role": "system", "content": _PROBE}, {"role": "user", "content": "hi"}]).prompt
    return _PROBE in prompt


class _SystemInFirstUserTurn:
    """A format without a system role: the system message (the simulation context,
    the tool list) goes at the start of the first user turn, as Gemma's own chat
    template does; the prompt still starts with it, so its saved state is shared."""

    def __init__(self, formatter: Any) -> None:
        self.formatter = formatter

    def __call__(self, *, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
        if messages and messages[0].get("role") == "system":
            system, rest = str(messages[0].get("content") or ""), list(messages[1:])
            if rest and rest[0].get("role") == "user":
                rest[0] = {**rest[0], "content": system + "\n\n" + str(rest[0].get("content") or "")}
            else:
                rest.insert(0, {"role": "user", "content": system})
            messages = rest
        return self.formatter(messages=messages, **kwargs)


_VALID_GRAMMARS: set[str] = set()


def check_grammar(llama: Any, text: str) -> None:
    """Parse GBNF with llama.cpp's own parser before generating with it (llama-cpp-
    python parses it only when sampling starts, and a NULL sampler there crashes)."""
    import llama_cpp

    if text in _VALID_GRAMMARS:
        return
    sampler = llama_cpp.llama_sampler_init_grammar(llama._model.vocab, text.encode(), b"root")
    if not sampler:
        raise WorldModelError(f"the observation grammar is not valid GBNF: {text[:200]!r}")
    llama_cpp.llama_sampler_free(sampler)
    if len(_VALID_GRAMMARS) > 1024:
        _VALID_GRAMMARS.clear()
    _VALID_GRAMMARS.add(text)


@functools.lru_cache(maxsize=128)
def _gbnf_grammar(text: str) -> Any:
    from llama_cpp import LlamaGrammar

    try:
        return LlamaGrammar.from_string(text, verbose=False)
    except (ValueError, RuntimeError) as exc:
        raise WorldModelError(f"the observation grammar is not valid GBNF: {exc}") from exc


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
