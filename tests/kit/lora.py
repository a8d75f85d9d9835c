"""LoRA adapters for a GGUF model, written with the gguf package the way llama.cpp's
convert_lora_to_gguf.py writes them: `general.type = adapter`, `adapter.type = lora`,
`adapter.lora.alpha`, the base model's `general.architecture`, and for each adapted
weight `NAME.lora_a` and `NAME.lora_b`. In numpy's order (rows first) `lora_a` is
rank × the weight's columns and `lora_b` the weight's rows × rank, as PEFT's `lora_A`
and `lora_B` are; llama.cpp adds `alpha / rank · B·A` to the weight."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path


@functools.cache
def adaptable_weights(base: Path) -> tuple[str, tuple[tuple[str, int, int], ...]]:
    """`base`'s architecture and its blocks' weights: (name, columns, rows) each. Read once
    per model (the gguf reader parses every field, the vocabulary's too: seconds)."""
    import gguf

    reader = gguf.GGUFReader(base)
    weights = tuple(
        (tensor.name, int(tensor.shape[0]), int(tensor.shape[1]))  # a GGUF shape lists the innermost dimension first
        for tensor in reader.tensors
        if tensor.name.startswith("blk.") and len(tensor.shape) == 2
    )
    return str(reader.fields["general.architecture"].contents()), weights


def write_lora_adapter(
    base: Path,
    out: Path,
    *,
    rank: int = 4,
    alpha: float = 8.0,
    spread: float = 0.2,
    zero: bool = False,
    weights: Sequence[str] = ("attn_q", "attn_v"),
    seed: int = 0,
) -> Path:
    """An adapter of `base` (a GGUF model) at `out`: every block's `weights` adapted with
    seeded normal values of standard deviation `spread`; `zero`: `lora_b` all zeros, so
    that the adapter changes nothing though llama.cpp applies it."""
    import gguf
    import numpy as np

    architecture, found = adaptable_weights(base)
    wanted = {f".{weight}.weight" for weight in weights}
    adapted = [(name, columns, rows) for name, columns, rows in found if name[name.index(".", 4) :] in wanted]
    assert adapted, f"{base} has no weight among {sorted(wanted)}"
    random = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(out, architecture)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    for name, columns, rows in adapted:
        lora_a = random.normal(0.0, spread, (rank, columns)).astype(np.float32)
        lora_b = np.zeros((rows, rank), np.float32) if zero else random.normal(0.0, spread, (rows, rank))
        writer.add_tensor(f"{name}.lora_a", lora_a)
        writer.add_tensor(f"{name}.lora_b", lora_b.astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out
