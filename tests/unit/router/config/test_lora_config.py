"""`world_model.lora_path`: a GGUF adapter file, found from the config file's folder,
checked when the config loads (not at the first simulated call), and handed to the
in-process engine, whose answers name it beside the model."""

from pathlib import Path

import pytest

from router.config import ConfigError, parse_config
from router.runtime.simulated_side import build_model_runner


def error_of(text: str, base_dir: Path) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text, source="s.yaml", base_dir=base_dir)
    return str(info.value)


def test_a_relative_adapter_is_found_from_the_config_folder_and_named_beside_the_model(tmp_path):
    (tmp_path / "adapters").mkdir()
    (tmp_path / "adapters" / "tickets.gguf").write_bytes(b"GGUF")
    config = parse_config(
        "world_model:\n  model_path: base.gguf\n  lora_path: adapters/tickets.gguf\n", base_dir=tmp_path
    )
    engine = build_model_runner(config)
    assert engine.lora_path == tmp_path / "adapters" / "tickets.gguf"
    assert engine.model_name == "base.gguf+tickets.gguf"


def test_without_an_adapter_the_model_is_named_alone(tmp_path):
    engine = build_model_runner(parse_config("world_model: {model_path: base.gguf}", base_dir=tmp_path))
    assert engine.lora_path is None and engine.model_name == "base.gguf"


def test_a_missing_adapter_is_a_config_error_on_its_line(tmp_path):
    message = error_of("world_model:\n  lora_path: gone.gguf\n", tmp_path)
    assert message == f"s.yaml:2: world_model.lora_path: no such adapter file: {tmp_path / 'gone.gguf'}"


def test_an_adapter_that_is_no_gguf_file_is_refused(tmp_path):
    (tmp_path / "adapter_model.safetensors").write_bytes(b"{}")
    message = error_of("world_model:\n  lora_path: adapter_model.safetensors\n", tmp_path)
    assert message.startswith("s.yaml:2: world_model.lora_path: ") and "is not a GGUF adapter file" in message


def test_a_served_model_takes_no_adapter(tmp_path):
    (tmp_path / "a.gguf").write_bytes(b"GGUF")
    message = error_of("world_model:\n  engine: openai\n  url: http://127.0.0.1:9/v1\n  lora_path: a.gguf\n", tmp_path)
    assert "lora_path is applied by the in-process engine" in message
