"""A refused LoRA adapter raises instead of crashing the process.

llama-cpp-python (0.3.36) loads `Llama(lora_path=...)`'s adapter with
`llama_adapter_lora_init` and checks the result with `is None`; the binding returns a
ctypes pointer, NULL when llama.cpp refuses the adapter (another model's, another
architecture, wrong shapes), and a NULL pointer is not None. The refused adapter is
then set on the context and the first computation ends the process with a
segmentation fault. Patched once, before a model with an adapter loads: NULL comes back
as None, so `Llama` raises its own RuntimeError ("Failed to initialize LoRA adapter"),
which the model runner reports as ModelUnavailable. A version that checks the pointer itself
is unaffected (a valid pointer passes through; None stays None)."""

from __future__ import annotations

from typing import Any

_patched = False


def refused_adapter_raises() -> None:
    global _patched
    if _patched:
        return
    import llama_cpp.llama_cpp as bindings  # the module llama_cpp.llama calls the function through

    loaded = bindings.llama_adapter_lora_init

    def checked(model: Any, path_lora: bytes, /) -> Any:
        adapter = loaded(model, path_lora)
        return adapter if adapter else None  # a NULL ctypes pointer is falsy

    bindings.llama_adapter_lora_init = checked
    _patched = True
