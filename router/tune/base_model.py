"""The base model for training, from the configured GGUF file alone: transformers reads
it (dequantised to float32) with its tokenizer, nothing fetched from the Hugging Face
Hub (`HF_HUB_OFFLINE=1`). A GGUF-loaded model refuses `save_pretrained`, and the
conversion back to GGUF needs the base as a Hugging Face folder, so its weights are
copied into a fresh model of the same config, which is saved once per run
(`base-hf/` in the run's folder) and trained from there. Needs the training stack."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

BASE_FOLDER = "base-hf"


def offline() -> None:
    """No download from the Hub, from here on: a missing file fails at once."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # simroute's own bar is the one shown (transformers' GGUF reader uses tqdm directly).
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = os.environ["TQDM_DISABLE"] = "1"
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
    from transformers.utils import logging

    logging.set_verbosity_error()
    logging.disable_progress_bar()


def base_folder(gguf: Path, out: Path) -> Path:
    """The base model as a Hugging Face folder in the run `out`, made from `gguf` once."""
    folder = out / BASE_FOLDER
    if (folder / "config.json").exists() and (folder / "tokenizer_config.json").exists():
        return folder
    offline()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    config = loaded.config
    # The fresh model holds plain float32 weights: a config still saying "quantised as GGUF"
    # would make the conversion scripts refuse the folder.
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = fresh.load_state_dict(loaded.state_dict(), strict=False)
    # Tied output embeddings are the one weight a state dict may leave out.
    if unexpected or [name for name in missing if name != "lm_head.weight"]:
        raise RuntimeError(f"{gguf.name}'s weights do not fit its config: missing {missing}, unexpected {unexpected}")
    fresh.generation_config = loaded.generation_config
    partial = folder.with_name(folder.name + ".partial")
    fresh.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    partial.rename(folder)
    return folder


def load_for_training(folder: Path, device: str) -> tuple[Any, Any]:
    """The saved base model (float32, on `device`) and its tokenizer."""
    offline()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32).to(device)
    return model, tokenizer


def device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
