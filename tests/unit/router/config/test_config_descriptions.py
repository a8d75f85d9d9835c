"""The configuration reference is generated from the config models' field
descriptions, so every field must have one; and the config files the project
ships (and the config examples in the docs) must still validate."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from router.config import Config, parse_config

REPO = Path(__file__).resolve().parents[4]


def _models_under(annotation: object) -> list[type[BaseModel]]:
    """The pydantic models an annotation names, through unions, containers and `Annotated`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found.extend(_models_under(arg))
    return found


def _all_models(root: type[BaseModel]) -> list[type[BaseModel]]:
    seen: list[type[BaseModel]] = []
    todo = [root]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.append(model)
        for field in model.model_fields.values():
            todo.extend(_models_under(field.annotation))
    return seen


MODELS = _all_models(Config)


def test_the_walk_reaches_every_section() -> None:
    names = {model.__name__ for model in MODELS}
    assert {
        "Config",
        "ShellLimits",
        "BrowserLimits",
        "NoiseConfig",
        "StdioServer",
        "RemoteServer",
        "LearnedConfig",
    } <= names


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_field_is_described(model: type[BaseModel]) -> None:
    undescribed = [name for name, field in model.model_fields.items() if not (field.description or "").strip()]
    assert undescribed == [], f"{model.__name__}: fields without a description: {undescribed}"


def _shipped_configs() -> list[Path]:
    return [REPO / "deploy" / "simroute.yaml"]


@pytest.mark.parametrize("path", _shipped_configs(), ids=lambda p: str(p.relative_to(REPO)))
def test_shipped_configs_validate(path: Path) -> None:
    config = parse_config(path.read_text(encoding="utf-8"), source=str(path), base_dir=path.parent)
    config.parsed_rules()


_YAML_BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.MULTILINE | re.DOTALL)
_TOP_KEYS = set(Config.model_fields) | {"mcpServers"}


def _docs_examples() -> list:
    """Fenced YAML blocks in the docs and the README whose keys are all config sections."""
    import yaml

    examples = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        if not page.exists():
            continue
        for n, block in enumerate(_YAML_BLOCK.findall(page.read_text(encoding="utf-8"))):
            data = yaml.safe_load(block)
            if isinstance(data, dict) and data and set(data) <= _TOP_KEYS:
                examples.append(pytest.param(block, id=f"{page.name}#{n}"))
    return examples


@pytest.mark.parametrize("text", _docs_examples())
def test_config_examples_in_the_docs_validate(text: str) -> None:
    parse_config(text, source="a config example in the docs", base_dir=REPO)
