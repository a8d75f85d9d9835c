"""The training: a LoRA adapter (PEFT) of the base model on `train.jsonl`, the loss on
the targets only (router/tune/examples.py), in a plain loop (AdamW, gradient
accumulation), on a CUDA device when there is one, else the CPU. Seeded: the
adapter's initial weights and dropout by `torch.manual_seed`, the examples' order by
the seed and the epoch. After each epoch a checkpoint (`checkpoints/epoch-N/`: the
adapter, the optimiser's and the random generators' state), so that `--resume`
continues an interrupted run from the last whole epoch. Needs the training stack."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from router.tune.base_model import device, load_for_training
from router.tune.examples import batches, epoch_order, padded, tokenized_file
from router.tune.settings import Hyperparameters

CHECKPOINTS = "checkpoints"
ADAPTER_FOLDER = "adapter-hf"  # the trained adapter in PEFT's layout, what the conversion reads
STATE = "state.json"


class TrainingError(RuntimeError):
    """The training could not run (said to the user as is)."""


def last_checkpoint(out: Path) -> tuple[int, Path] | None:
    """The last whole epoch's checkpoint in the run `out` (its number and folder)."""
    found = []
    for folder in (out / CHECKPOINTS).glob("epoch-*"):
        if (folder / STATE).exists() and folder.name.removeprefix("epoch-").isdigit():
            found.append((int(folder.name.removeprefix("epoch-")), folder))
    return max(found) if found else None


def train(
    out: Path,
    base: Path,
    hyper: Hyperparameters,
    *,
    resume: bool,
    progress: Callable[[int, int], Callable[[int], None]],
) -> tuple[Any, Any, dict[str, Any]]:
    """Trains in the run `out` from the base model's folder `base`; returns the trained
    model (PEFT), its tokenizer and the training's figures. `progress(total, done)`
    gives the function to call with each step done."""
    import torch
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
    from safetensors.torch import load_file

    where = device()
    torch.manual_seed(hyper.seed)
    model, tokenizer = load_for_training(base, where)
    examples, counts = tokenized_file(out / "train.jsonl", tokenizer, hyper.max_tokens)
    if not examples:
        raise TrainingError(f"no training example fits {hyper.max_tokens} tokens (--max-tokens)")
    lora = LoraConfig(
        r=hyper.lora_rank,
        lora_alpha=hyper.lora_alpha,
        lora_dropout=hyper.lora_dropout,
        target_modules=list(hyper.target_modules),
        bias="none",
        task_type="CAUSAL_LM",
    )
    model = get_peft_model(model, lora)
    trainable = [parameter for parameter in model.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=hyper.learning_rate, weight_decay=0.0)
    history: dict[str, Any] = {"epochs": []}
    first = 1
    if resume and (found := last_checkpoint(out)) is not None:
        done, folder = found
        set_peft_model_state_dict(model, load_file(str(folder / "adapter_model.safetensors"), device=where))
        optimizer.load_state_dict(torch.load(folder / "optimizer.pt", map_location=where))
        torch.set_rng_state(torch.load(folder / "rng.pt"))
        history = json.loads((folder / STATE).read_text(encoding="utf-8"))
        first = done + 1
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    steps_per_epoch = -(-len(examples) // hyper.batch_size)
    advance = progress(hyper.epochs * steps_per_epoch, (first - 1) * steps_per_epoch)
    model.train()
    for epoch in range(first, hyper.epochs + 1):
        started, tokens, losses = time.monotonic(), 0, []
        optimizer.zero_grad()
        order = epoch_order(len(examples), hyper.seed, epoch)
        for step, batch in enumerate(batches(examples, order, hyper.batch_size), 1):
            ids, labels, mask = (torch.tensor(rows, device=where) for rows in padded(batch, pad_id))
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            (loss / hyper.gradient_accumulation).backward()
            losses.append(float(loss.detach()))
            tokens += int(mask.sum())
            if step % hyper.gradient_accumulation == 0 or step == steps_per_epoch:
                optimizer.step()
                optimizer.zero_grad()
            advance(1)
        seconds = time.monotonic() - started
        history["epochs"].append(
            {
                "epoch": epoch,
                "seconds": round(seconds, 2),
                "tokens": tokens,
                "tokens_per_s": round(tokens / seconds, 1) if seconds else None,
                "mean_loss": round(sum(losses) / len(losses), 4),
            }
        )
        _checkpoint(out, epoch, model, optimizer, history)
    history |= {"device": where, "examples": counts.describe(), "resumed_from_epoch": first - 1 if resume else None}
    return model, tokenizer, history


def _checkpoint(out: Path, epoch: int, model: Any, optimizer: Any, history: dict[str, Any]) -> None:
    """The epoch's checkpoint, whole or not at all (written aside, then renamed)."""
    import torch

    folder = out / CHECKPOINTS / f"epoch-{epoch}"
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    torch.save(optimizer.state_dict(), partial / "optimizer.pt")
    torch.save(torch.get_rng_state(), partial / "rng.pt")
    (partial / STATE).write_text(json.dumps(history, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)


def save_adapter(model: Any, out: Path) -> Path:
    """The trained adapter in PEFT's layout (`adapter-hf/`), for the conversion."""
    folder = out / ADAPTER_FOLDER
    shutil.rmtree(folder, ignore_errors=True)
    model.save_pretrained(folder)
    return folder


def save_merged(model: Any, tokenizer: Any, out: Path) -> Path:
    """The base model with the adapter merged in (`merged-hf/`), for the conversion."""
    folder = out / "merged-hf"
    shutil.rmtree(folder, ignore_errors=True)
    model.merge_and_unload().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
