"""A tiny llama-architecture GGUF model with random weights, written with the gguf package:
two blocks of width 64, float32, and the bundled model's tokenizer and chat template
(copied field by field from its GGUF), so that transformers and llama-cpp-python read it
as they read the bundled model, in a fraction of the time. What it writes is noise; a
test trains it on a few examples and checks the round trip, not the words."""

from __future__ import annotations

from pathlib import Path

BLOCKS, WIDTH, HEADS, KV_HEADS, FEED_FORWARD, CONTEXT = 2, 64, 4, 2, 128, 2048


def write_tiny_llama(tokenizer_from: Path, out: Path, *, seed: int = 0) -> Path:
    """A random tiny llama at `out` with the tokenizer of the GGUF model `tokenizer_from`."""
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(tokenizer_from)
    vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    writer = gguf.GGUFWriter(out, "llama")
    writer.add_name("tiny-llama")
    writer.add_block_count(BLOCKS)
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(WIDTH)
    writer.add_feed_forward_length(FEED_FORWARD)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_freq_base(10000.0)
    writer.add_rope_dimension_count(WIDTH // HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(vocab)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    for key, field in reader.fields.items():
        if key.startswith("tokenizer."):
            kind = field.types[0]
            sub = field.types[1] if kind == gguf.GGUFValueType.ARRAY else None
            writer.add_key_value(key, field.contents(), kind, sub_type=sub)
    random = np.random.default_rng(seed)

    def weight(*shape: int, spread: float = 0.05) -> np.ndarray:
        return random.normal(0.0, spread, shape).astype(np.float32)

    kv_width = WIDTH // HEADS * KV_HEADS
    writer.add_tensor("token_embd.weight", weight(vocab, WIDTH))
    writer.add_tensor("output_norm.weight", np.ones(WIDTH, np.float32))
    writer.add_tensor("output.weight", weight(vocab, WIDTH))
    for block in range(BLOCKS):
        name = f"blk.{block}"
        writer.add_tensor(f"{name}.attn_norm.weight", np.ones(WIDTH, np.float32))
        writer.add_tensor(f"{name}.attn_q.weight", weight(WIDTH, WIDTH))
        writer.add_tensor(f"{name}.attn_k.weight", weight(kv_width, WIDTH))
        writer.add_tensor(f"{name}.attn_v.weight", weight(kv_width, WIDTH))
        writer.add_tensor(f"{name}.attn_output.weight", weight(WIDTH, WIDTH))
        writer.add_tensor(f"{name}.ffn_norm.weight", np.ones(WIDTH, np.float32))
        writer.add_tensor(f"{name}.ffn_gate.weight", weight(FEED_FORWARD, WIDTH))
        writer.add_tensor(f"{name}.ffn_up.weight", weight(FEED_FORWARD, WIDTH))
        writer.add_tensor(f"{name}.ffn_down.weight", weight(WIDTH, FEED_FORWARD))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out
