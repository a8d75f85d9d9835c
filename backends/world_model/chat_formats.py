"""Chat formats for the in-process model runner: how messages become a GGUF model's prompt.

A GGUF file usually carries its own chat template (`tokenizer.chat_template`),
rendered with llama-cpp-python's Jinja2 formatter. A file without one needs
`world_model.chat_format`, one of llama-cpp-python's registered formats; a
format that drops the system message (its `gemma`) gets the system message at
the start of the first user turn instead, so the simulation context and the
tool list still reach the model.

llama-cpp-python is imported inside the functions: it is an optional extra.
"""

from __future__ import annotations

from typing import Any

from backends.world_model.model_runner import ModelUnavailable

_PROBE = "simroute-system-probe"


def chat_format_problem(name: str) -> str | None:
    """Why `name` cannot serve as `world_model.chat_format` ("'x' is not a registered
    chat format: …"), or None when it can. For the config's check at load."""
    try:
        _handler_formatter(name)
    except _FormatUnusable as exc:
        return str(exc)
    return None


def registered_formatter(name: str) -> Any:
    """The chat formatter llama-cpp-python registered under `name`, keeping the
    system message. Raises ModelUnavailable naming the problem."""
    try:
        formatter = _handler_formatter(name)
    except _FormatUnusable as exc:
        raise ModelUnavailable(f"world_model.chat_format {exc}") from exc
    return formatter if _keeps_system(formatter) else _SystemInFirstUserTurn(formatter)


def template_formatter(llama: Any, model_path: object) -> Any:
    """The formatter of the chat template in the model file's metadata. Raises
    ModelUnavailable when the file has none (then `world_model.chat_format` is needed)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        raise ModelUnavailable(
            f"{model_path} has no chat template in its metadata: set world_model.chat_format "
            f"(one of llama-cpp-python's registered formats, e.g. chatml, llama-2, gemma)"
        )
    eos = llama.detokenize([llama.token_eos()], special=True).decode(errors="ignore")
    bos = llama.detokenize([llama.token_bos()], special=True).decode(errors="ignore")
    return Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)


class _FormatUnusable(ValueError):
    """`name` is not a plain registered chat format; the message says why."""


def _handler_formatter(name: str) -> Any:
    """The formatter inside the completion handler registered under `name` (the
    registry keeps handlers; the formatter is the handler's closure)."""
    import inspect

    from llama_cpp import llama_chat_format

    try:
        handler = llama_chat_format.get_chat_completion_handler(name)
    except llama_chat_format.LlamaChatCompletionHandlerNotFoundException as exc:
        raise _FormatUnusable(f"{name!r} is not a registered chat format: {exc}") from exc
    formatter = inspect.getclosurevars(handler).nonlocals.get("chat_formatter")
    if formatter is None:
        raise _FormatUnusable(f"{name!r} is a completion handler, not a plain chat format")
    return formatter


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
