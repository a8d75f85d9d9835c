"""The training stack, an optional extra (`simroute[tune]` in pyproject.toml): never in
the default install, the images or CI's set-up. Whether it is here is asked without
importing it (torch alone takes seconds to import)."""

from __future__ import annotations

import importlib.util

# What the training imports, by import name (the extra also pins safetensors, which
# transformers and PEFT save with).
TRAINING_PACKAGES = ("torch", "transformers", "peft", "sentencepiece", "safetensors")
INSTALL = "pip install 'simroute[tune]'"


def missing_packages() -> list[str]:
    """The training stack's packages that are not importable here."""
    return [name for name in TRAINING_PACKAGES if importlib.util.find_spec(name) is None]


def install_hint(missing: list[str]) -> str:
    """What to tell a user whose environment lacks `missing`."""
    return (
        f"training needs the optional training stack ({', '.join(missing)} not installed): {INSTALL} "
        "(PyTorch and its dependencies, several GB; see docs/tune.md). "
        "`simroute tune OUT --data-only` writes the training data and the model card without it."
    )
