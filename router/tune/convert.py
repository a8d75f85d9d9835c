"""The trained candidate back to GGUF, with llama.cpp's own scripts as `--prepare`
extracted them (router/tune/prepare.py): `convert_lora_to_gguf.py` for an adapter
(it reads the base model's config from the run's `base-hf/`), `convert_hf_to_gguf.py`
for a merged model. Each runs as a subprocess of this Python with the cache's `gguf-py`
first on the path (the version the in-process model runner reads), offline. Then the
result is loaded in llama-cpp-python, the way the model runner will load it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from router.tune.prepare import ConversionTools

ADAPTER_FILE, MERGED_FILE = "adapter.gguf", "model.gguf"


class ConversionError(RuntimeError):
    """A conversion script failed, or llama-cpp-python refused what it wrote (said as is)."""


def convert_adapter(tools: ConversionTools, adapter: Path, base: Path, out: Path) -> Path:
    """The PEFT adapter folder `adapter` of the base model folder `base` as `out/adapter.gguf` (float32)."""
    target = out.resolve() / ADAPTER_FILE  # absolute: the scripts run in the tools' folder
    base, adapter = base.resolve(), adapter.resolve()
    _run(tools, tools.convert_lora, "--base", str(base), "--outtype", "f32", "--outfile", str(target), str(adapter))
    return target


def convert_merged(tools: ConversionTools, merged: Path, out: Path) -> Path:
    """The merged model folder `merged` as `out/model.gguf` (Q8_0: the closest to the
    base's quantisation that the script writes)."""
    target = out.resolve() / MERGED_FILE
    _run(tools, tools.convert_hf, "--outtype", "q8_0", "--outfile", str(target), str(merged.resolve()))
    return target


def _run(tools: ConversionTools, script: Path, *args: str) -> None:
    path = os.pathsep.join((str(tools.gguf_py), str(tools.folder)))
    env = {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, env=env, cwd=tools.folder
    )
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise ConversionError(f"{script.name} failed (exit {done.returncode}):\n{tail}")


def check_loads(model: Path, adapter: Path | None) -> None:
    """Loads `model` (with `adapter`) in llama-cpp-python, as the model runner does
    (`world_model.lora_path`), and evaluates one token; raises ConversionError when it cannot."""
    from llama_cpp import Llama

    try:
        llama = Llama(
            model_path=str(model),
            lora_path=str(adapter) if adapter is not None else None,
            n_ctx=64,
            n_threads=1,
            verbose=False,
        )
        try:
            llama.eval(llama.tokenize(b"ok", add_bos=True))
        finally:
            llama.close()
    except (ValueError, RuntimeError) as exc:
        raise ConversionError(f"llama-cpp-python could not load {adapter or model}: {exc}") from exc
