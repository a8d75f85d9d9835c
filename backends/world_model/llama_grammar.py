"""Grammars for the in-process model runner: GBNF text (from a domain, grammars.py) or a
tool's output schema, compiled by llama-cpp-python and checked before use.

A grammar llama.cpp cannot parse becomes a WorldModelError naming the cause,
before any token is evaluated: llama-cpp-python itself parses a grammar only
when sampling starts, where a NULL sampler crashes the process.
"""

from __future__ import annotations

import functools
from typing import Any

from backends.world_model.model_runner import WorldModelError

_VALID_GRAMMARS: set[str] = set()


def check_grammar(llama: Any, text: str) -> None:
    """Parse GBNF with llama.cpp's own parser before generating with it."""
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
def gbnf_grammar(text: str) -> Any:
    """The compiled grammar of GBNF `text`."""
    from llama_cpp import LlamaGrammar

    try:
        return LlamaGrammar.from_string(text, verbose=False)
    except (ValueError, RuntimeError) as exc:
        raise WorldModelError(f"the observation grammar is not valid GBNF: {exc}") from exc


@functools.lru_cache(maxsize=64)
def schema_grammar(schema_json: str) -> Any:
    """The compiled grammar of a JSON Schema. Compiling takes milliseconds; a tool's
    schema rarely changes. llama.cpp's converter rejects some JSON Schema keywords
    (`not`, remote `$ref`) with an AssertionError; that becomes a WorldModelError
    naming the cause."""
    from llama_cpp import LlamaGrammar

    try:
        return LlamaGrammar.from_json_schema(schema_json, verbose=False)
    except (AssertionError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise WorldModelError(f"the tool's output schema cannot be turned into a generation grammar: {exc}") from exc
