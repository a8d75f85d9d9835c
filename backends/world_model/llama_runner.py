"""A GGUF world model run in-process with llama-cpp-python.

- One `Llama` object never serves two calls at once: each context has a lock,
  one computation runs at a time across contexts, the agent's calls before
  background (shadow) work, and its work runs in a worker thread
  (model_access.py).
- Deadlines stop work: the prompt is evaluated in batches with a deadline check
  between them, and a stopping criterion ends generation at the deadline, so the
  object is free for the next call right after. A cancelled call (the agent hung
  up, shutdown) sets a flag the same checks read, and keeps the locks until its
  worker thread has stopped.
- Per-session prefix reuse and the shared system-prompt states: llama_contexts.py.
- The prompt's chat format: chat_formats.py. A grammar (GBNF from the domain, or
  an output schema) shapes the answer: llama_grammar.py.

llama-cpp-python's own errors are translated here: a model that does not load
becomes ModelUnavailable; a failed `llama_decode` (its RuntimeError) becomes
WorldModelTimeout when the deadline stopped it, else WorldModelError.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from backends.world_model.chat_formats import registered_formatter, template_formatter
from backends.world_model.llama_contexts import ContextPool, LlamaContext, SystemStates
from backends.world_model.llama_grammar import check_grammar, gbnf_grammar, schema_grammar
from backends.world_model.llama_logs import route_llama_logs
from backends.world_model.llama_lora import refused_adapter_raises
from backends.world_model.model_access import Cancelled, PriorityLock, run_to_the_end
from backends.world_model.model_runner import (
    Completion,
    ContextOverflow,
    ModelUnavailable,
    WorldModelError,
    WorldModelTimeout,
)

_read_aheads = itertools.count(1)


class LlamaCppRunner:
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
        lora_path: str | Path | None = None,  # a LoRA adapter (GGUF) applied to the model at full scale
    ) -> None:
        self.model_path = Path(model_path).expanduser()
        self.lora_path = Path(lora_path).expanduser() if lora_path is not None else None
        # The answers' source names the adapter too, so base and adapter answers stay apart.
        self.model_name = self.model_path.name + (f"+{self.lora_path.name}" if self.lora_path else "")
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
        self._system_states = SystemStates(shared_system_states)
        self._pool = ContextPool(self._load, cached_sessions)
        self._start_lock = asyncio.Lock()
        # One computation at a time across contexts: each already uses every core,
        # and llama.cpp's threads spin, so two at once are slower than two in turn.
        # The agent's own calls go before background (shadow) work.
        self._compute = PriorityLock()

    async def start(self) -> None:
        async with self._start_lock:
            if self._pool.contexts:
                return
            if not self.model_path.is_file():
                raise ModelUnavailable(
                    f"world model file not found: {self.model_path} (scripts/setup.sh installs the default model)"
                )
            if self.lora_path is not None and not self.lora_path.is_file():
                raise ModelUnavailable(f"world model adapter file not found: {self.lora_path}")
            first = await anyio.to_thread.run_sync(self._load)
            self._pool.contexts.append(first)

    def _load(self) -> LlamaContext:
        import llama_cpp
        from llama_cpp import Llama

        route_llama_logs()  # after llama-cpp-python installed its own callback at import
        if self.lora_path is not None:
            refused_adapter_raises()  # a refused adapter would crash the process (llama_lora.py)
        try:
            llama = Llama(
                model_path=str(self.model_path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_batch=self.n_batch,
                seed=self.seed,
                # Applied to each context at scale 1 (lora_scale); llama-cpp-python reads the whole
                # model into memory instead of mapping it when an adapter is given.
                lora_path=str(self.lora_path) if self.lora_path else None,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            adapter = f" with the adapter {self.lora_path}" if self.lora_path else ""
            raise ModelUnavailable(f"cannot load world model {self.model_path}{adapter}: {exc}") from exc
        try:
            formatter = (
                registered_formatter(self.chat_format)
                if self.chat_format
                else template_formatter(llama, self.model_path)
            )
        except ModelUnavailable:
            llama.close()
            raise
        context = LlamaContext(llama=llama, formatter=formatter)
        context.abort_callback = llama_cpp.ggml_abort_callback(lambda _data: context.should_stop())
        llama_cpp.llama_set_abort_callback(llama.ctx, context.abort_callback, None)
        return context

    def count_tokens(self, text: str) -> int:
        if not self._pool.contexts:
            return len(text) // 3
        return len(self._pool.contexts[0].llama.tokenize(text.encode(), add_bos=False, special=True))

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
        context = await self._pool.for_session(session_id)  # nor is loading another context
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
            sampling = _Sampling(
                json_schema,
                grammar,
                list(stop or []),
                self.temperature if temperature is None else temperature,
                self.seed + seed_offset,
            )
            work = functools.partial(self._complete_sync, context, messages, deadline, deadline_s, max_tokens, sampling)
            return await run_to_the_end(work, context.cancelled)
        finally:
            context.last_used = time.monotonic()
            self._compute.release()
            context.lock.release()

    async def read_ahead(self, messages: list[dict[str, Any]], *, deadline_s: float = 120.0) -> int:
        """Read the system prompt of `messages` now, at background priority, and keep
        the model state after it (see SystemStates.prefill), so the first session that starts
        with it reads only its own turns. Returns the tokens read (0: nothing to keep).
        The context is left unbound: any new session may take it."""
        if not self.shared_system_states:
            return 0
        session_id = f"\0read-ahead-{next(_read_aheads)}"  # no agent's session id starts with NUL
        try:
            completion = await self.complete(
                messages, session_id=session_id, deadline_s=deadline_s, max_tokens=1, background=True
            )
        finally:
            self._pool.unbind(session_id)
        return completion.evaluated_tokens

    def _complete_sync(
        self,
        context: LlamaContext,
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
                f"prompt of {len(tokens)} tokens + {max_tokens} to "
                f"generate exceeds the world model's context of {self.n_ctx}"
            )
        # Before any evaluation: an unusable grammar costs nothing.
        if sampling.grammar is not None:
            grammar = gbnf_grammar(sampling.grammar)
            check_grammar(llama, sampling.grammar)
        elif sampling.json_schema is not None:
            grammar = schema_grammar(json.dumps(sampling.json_schema, sort_keys=True))
        else:
            grammar = None
        system_end = self._system_states.system_prompt_end(llama, formatted.prompt, messages, tokens)
        try:
            evaluated = self._system_states.prefill(
                llama,
                tokens,
                n_batch=self.n_batch,
                deadline=deadline,
                deadline_s=deadline_s,
                cancelled=context.cancelled,
                system_end=system_end,
            )
        except WorldModelError:
            raise
        except RuntimeError as exc:  # llama_decode failed: aborted (deadline, cancel), or out of KV cells
            self._raise_stopped(context, deadline_s, "reading the prompt")
            raise WorldModelError(f"world model failed while reading the prompt: {exc}") from exc

        def past_deadline(input_ids: Any, logits: Any) -> bool:
            return context.should_stop()

        stop = [
            s for s in ([formatted.stop] if isinstance(formatted.stop, str) else (formatted.stop or []))
        ] + sampling.stop
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
            model=self.model_name,
        )

    @staticmethod
    def _raise_stopped(context: LlamaContext, deadline_s: float, doing: str) -> None:
        if context.cancelled.is_set():
            raise Cancelled
        if time.monotonic() >= context.stop_at:
            raise WorldModelTimeout(
                f"world model did not finish within its {deadline_s:g}s deadline (stopped while {doing})"
            )

    async def aclose(self) -> None:
        for context in self._pool.take_all():
            async with context.lock:
                context.llama.close()


@dataclass(frozen=True, slots=True)
class _Sampling:
    json_schema: dict[str, Any] | None
    grammar: str | None
    stop: list[str]
    temperature: float
    seed: int
