"""The config file's `world_model` section: the simulated side (a GGUF model in-process
or an OpenAI-compatible server), its prompts and its sampling. A strict pydantic
model (unknown keys are errors); each field's description is the configuration
reference's text."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, PositiveFloat, PositiveInt, field_validator, model_validator

from backends.options import Strict
from backends.world_model.world_document import WorldDocument

DEFAULT_MODEL_PATH = "~/.cache/simroute/models/SmolLM2-135M-Instruct.Q4_1.gguf"


class WorldModelConfig(Strict):
    """The simulated side. `llama`: a GGUF model in-process; `openai`: any
    OpenAI-compatible server (llama-server, vLLM, SGLang)."""

    engine: Literal["llama", "openai"] = Field(
        default="llama", description="The model runner. `llama`: a GGUF model in-process; `openai`: a served model."
    )
    model_path: str = Field(
        default=DEFAULT_MODEL_PATH, description="`llama`: the GGUF file; relative to the config file's folder."
    )
    lora_path: str | None = Field(
        default=None,
        description=(
            "`llama`: a LoRA adapter for the model (a GGUF adapter file, e.g. from `simroute tune`), applied "
            "at full scale; relative to the config file's folder. A simulated answer's source names both "
            "(`model.gguf+adapter.gguf`)."
        ),
    )
    url: str | None = Field(
        default=None, description="`openai`: the server's base URL, e.g. `http://127.0.0.1:8080/v1`."
    )
    model: str = Field(default="default", description="`openai`: the served model's name.")
    api_key_env: str | None = Field(default=None, description="`openai`: the environment variable holding the API key.")
    context_tokens: PositiveInt = Field(
        default=4096, description="Context size; history is trimmed from the oldest turns to fit."
    )
    max_tokens: PositiveInt = Field(
        default=256, description="Tokens generated per prediction (thinking models need far more)."
    )
    deadline_s: PositiveFloat = Field(
        default=60.0, description="Deadline per simulated call (model loading is not charged to it)."
    )
    temperature: float = Field(default=0.6, ge=0, description="Sampling temperature.")
    top_p: float = Field(default=0.95, gt=0, le=1, description="Sampling: nucleus probability mass.")
    top_k: int = Field(default=20, ge=0, description="Sampling: most likely tokens kept.")
    seed: int = Field(default=0, description="Sampling seed.")
    threads: PositiveInt | None = Field(
        default=None, description="`llama`: CPU threads (unset: half the cores; idle threads spin)."
    )
    cached_sessions: PositiveInt = Field(
        default=4, description="`llama`: model contexts kept, one session's prompt prefix each."
    )
    prefill_observation: bool = Field(
        default=True, description="`llama`: prefill the observation marker (off: thinking models)."
    )
    chat_format: str | None = Field(
        default=None, description="`llama`: a chat format (`chatml`, `gemma`…) for a GGUF without a template."
    )
    tool_list: Literal["auto", "json", "signatures"] = Field(
        default="auto",
        description="Tools shown as `json` definitions or one-line `signatures`; `auto`: signatures in-process.",
    )
    demonstrations: int = Field(
        default=2, ge=0, description="Recorded real observations of the same tool shown to the model per prompt."
    )
    initial_state: dict[str, str] = Field(
        default={}, description="Per server (`shell`, `browser`, a host): what the simulated side holds."
    )
    simulation_instruction: dict[str, str] = Field(
        default={}, description="Per server: controls, e.g. `Fail every third call with a 503.`"
    )
    world: WorldDocument | None = Field(
        default=None,
        description="A fictional world every simulated server, host, shell and browser of a session is told.",
    )
    facts_kept: int = Field(
        default=48, ge=0, description="Facts a session's answers stated, kept and given back to the model (0: none)."
    )

    @field_validator("lora_path")
    @classmethod
    def _an_adapter_file(cls, value: str | None) -> str | None:
        # Whether it exists is checked once the config's folder is known (lora_problem).
        if value is not None and not value.endswith(".gguf"):
            raise ValueError(f"{value!r} is not a GGUF adapter file (a .gguf file, as llama.cpp loads it)")
        return value

    def lora_file(self, base_dir: Path) -> Path | None:
        """The adapter's file, a relative path taken from the config file's folder."""
        if self.lora_path is None:
            return None
        path = Path(self.lora_path).expanduser()
        return path if path.is_absolute() else base_dir / path

    def lora_problem(self, base_dir: Path) -> str | None:
        """What is wrong with the adapter's file (None: nothing, or no adapter)."""
        path = self.lora_file(base_dir)
        if path is None or path.is_file():
            return None
        return f"no such adapter file: {path}"

    @field_validator("chat_format")
    @classmethod
    def _a_registered_format(cls, value: str | None) -> str | None:
        """A misspelt format is a config error at load, not a failure at the first simulated call."""
        if value is None:
            return value
        try:
            import llama_cpp.llama_chat_format  # noqa: F401  (the optional gguf extra)
        except ImportError:
            return value  # no in-process model runner here: nothing to check the name against
        from backends.world_model.chat_formats import chat_format_problem

        problem = chat_format_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _endpoint_needs_url(self) -> WorldModelConfig:
        if self.engine == "openai" and not self.url:
            raise ValueError("engine 'openai' needs url (the server's base URL, e.g. http://127.0.0.1:8080/v1)")
        if self.engine == "openai" and self.lora_path is not None:
            raise ValueError("lora_path is applied by the in-process engine (llama); a served model loads its own")
        return self
