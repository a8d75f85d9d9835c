"""A LoRA adapter on the bundled GGUF model, as `world_model.lora_path` gives it to the
in-process engine: a real adapter file (tests/kit/lora.py) loads, and it is applied:
for a fixed prompt and seed, greedy answers change with a non-zero adapter and stay
the same with a zero one (`lora_b` all zeros: llama.cpp adds nothing to the weights).
The answer's model names the adapter beside the model."""

from __future__ import annotations

import pytest
from kit.launch import model_path
from kit.lora import write_lora_adapter

from router.config import parse_config
from router.runtime.simulated_side import build_model_runner

pytestmark = pytest.mark.integration

MESSAGES = [
    {"role": "system", "content": "You are a weather service. Answer with one JSON object."},
    {"role": "user", "content": 'forecast({"city": "Oslo"})'},
]


async def answer(folder, lora: str | None) -> tuple[str, str]:
    """The greedy answer of the model runner a config builds (with `lora` as its adapter) and its model."""
    lines = [f"  model_path: {model_path()}", "  temperature: 0", "  seed: 7", "  context_tokens: 512"]
    lines.append("  cached_sessions: 1")
    if lora is not None:
        lines.append(f"  lora_path: {lora}")
    config = parse_config("world_model:\n" + "\n".join(lines) + "\n", base_dir=folder)
    model_runner = build_model_runner(config)
    try:
        completion = await model_runner.complete(MESSAGES, session_id="s", deadline_s=300, max_tokens=16)
    finally:
        await model_runner.aclose()
    assert completion.completion_tokens > 0
    return completion.text, completion.model


async def test_an_adapter_loads_and_only_a_non_zero_one_changes_the_answer(tmp_path):
    write_lora_adapter(model_path(), tmp_path / "zero.gguf", zero=True)
    write_lora_adapter(model_path(), tmp_path / "tuned.gguf", spread=0.3, seed=3)
    base_text, base_model = await answer(tmp_path, None)
    zero_text, zero_model = await answer(tmp_path, "zero.gguf")  # relative: from the config's folder
    tuned_text, tuned_model = await answer(tmp_path, str(tmp_path / "tuned.gguf"))
    assert base_model == model_path().name
    assert zero_model == f"{model_path().name}+zero.gguf" and tuned_model == f"{model_path().name}+tuned.gguf"
    assert zero_text == base_text
    assert tuned_text != base_text


async def test_an_adapter_of_another_model_is_refused_with_the_reason(tmp_path):
    import gguf
    import numpy as np

    from backends.world_model.model_runner import ModelUnavailable

    wrong = tmp_path / "wrong-shape.gguf"
    # A weight of the wrong width: llama.cpp checks each adapted weight's shape against the model's.
    writer = gguf.GGUFWriter(wrong, "llama")
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, 4.0)
    writer.add_tensor("blk.0.attn_q.weight.lora_a", np.zeros((2, 7), np.float32))
    writer.add_tensor("blk.0.attn_q.weight.lora_b", np.zeros((7, 2), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ModelUnavailable, match="with the adapter .*wrong-shape.gguf"):
        await answer(tmp_path, "wrong-shape.gguf")
