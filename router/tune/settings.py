"""A tuning run's settings: which records become training data, the hyper-parameters,
and what the run produces. Validated when built; the model card records them as they
were (`describe`), so a run can be repeated and resumed with the same ones."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

OUTPUTS = ("adapter", "merged")
DEFAULT_EPOCHS = 1


@dataclass(frozen=True, slots=True)
class DataSettings:
    """The export step's choices, as `simroute export` takes them (one seed for the
    split and the training: the same seed, the same run)."""

    hardest_first: bool = False
    min_divergence: float | None = None
    test_fraction: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.min_divergence is not None and not 0.0 <= self.min_divergence <= 1.0:
            raise ValueError(f"the divergence threshold must be within 0..1, got {self.min_divergence}")
        if not 0.0 <= self.test_fraction < 1.0:
            raise ValueError(
                f"the test fraction must be within 0..1 (1 leaves nothing to train on), got {self.test_fraction}"
            )


@dataclass(frozen=True, slots=True)
class Hyperparameters:
    """LoRA fine-tuning of a small causal language model on a CPU, the loss on the
    target (the real observation) only. Defaults a small model takes well: rank 16,
    alpha 32 on the attention projections, 1 epoch at 2e-4 (a second one overfitted the
    bundled model on benchmarks/tune_loop.py's records: its held-out fidelity fell), and
    examples of at most 512 tokens (the export's prompts fit `world_model.context_tokens`, which may be
    longer: the training decides what to do with a longer example, and counts it)."""

    epochs: int = DEFAULT_EPOCHS
    learning_rate: float = 2e-4
    lora_rank: int = 16
    lora_alpha: float = 32.0
    lora_dropout: float = 0.05
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    max_tokens: int = 512
    batch_size: int = 1
    gradient_accumulation: int = 8
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("epochs", "lora_rank", "max_tokens", "batch_size", "gradient_accumulation"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name.replace('_', ' ')} must be at least 1, got {getattr(self, name)}")
        if not 0.0 < self.learning_rate < 1.0:
            raise ValueError(f"the learning rate must be within 0..1, got {self.learning_rate}")
        if self.lora_alpha <= 0 or not 0.0 <= self.lora_dropout < 1.0:
            raise ValueError("LoRA alpha must be positive and its dropout within 0..1")
        if not self.target_modules:
            raise ValueError("no module to adapt")


@dataclass(frozen=True, slots=True)
class TuneSettings:
    data: DataSettings
    hyperparameters: Hyperparameters
    # A LoRA adapter the base model loads (`world_model.lora_path`), or a model merged with it.
    output: Literal["adapter", "merged"] = "adapter"
    # Adopted without --adopt only when the candidate's held-out fidelity beats the base's by this much.
    margin: float = 0.05

    def __post_init__(self) -> None:
        if self.output not in OUTPUTS:
            raise ValueError(f"unknown output {self.output!r} (one of {', '.join(OUTPUTS)})")
        if not 0.0 <= self.margin <= 1.0:
            raise ValueError(f"the margin is a fidelity difference within 0..1, got {self.margin}")

    def describe(self) -> dict[str, Any]:
        hyper = asdict(self.hyperparameters)
        return {**hyper, "target_modules": list(self.hyperparameters.target_modules), "output": self.output}


def resumed(settings: TuneSettings, recorded: dict[str, Any], epochs: int | None) -> TuneSettings:
    """The settings a resumed run continues with: the hyper-parameters and the output its
    card recorded (`describe`), the epochs raised to `epochs` when given."""
    hyper = {name: value for name, value in recorded.items() if name != "output"}
    hyper["target_modules"] = tuple(hyper["target_modules"])
    if epochs is not None:
        hyper["epochs"] = epochs
    return replace(settings, hyperparameters=Hyperparameters(**hyper), output=recorded["output"])
