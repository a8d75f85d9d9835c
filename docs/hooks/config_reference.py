"""MkDocs hook: the configuration reference, generated at build time from the
config models (`router.config.Config`), so the code and the reference never
disagree. Every field's description is its `Field(description=...)`; a unit test
(`tests/unit/router/config/test_config_descriptions.py`) keeps them non-empty.

The page `configuration.md` holds the marker `<!-- simroute:config-reference -->`;
this hook replaces it with one section per config section (key path, type,
default, description) and nested models as sub-tables.
"""

from __future__ import annotations

import enum
import json
import sys
import typing
from pathlib import Path
from typing import Any

MARKER = "<!-- simroute:config-reference -->"


def on_config(config: Any) -> Any:
    """Put the repository root on the import path, so `router.config` imports."""
    root = str(Path(config["config_file_path"]).resolve().parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        return markdown
    from router.config import Config

    return markdown.replace(MARKER, render_reference(Config))


def render_reference(root: type) -> str:
    """The reference of a root model: its scalar keys, then one section per sub-model."""
    scalars, sections = [], []
    seen: dict[str, str] = {}  # a section whose type an earlier one had: say so, not the table again
    for name, field in root.model_fields.items():
        if field.exclude:
            continue  # set by the loader, not the file
        key = field.alias or name
        models = _models(field.annotation)
        if models and repr(field.annotation) in seen:
            sections.append(
                f"## `{key}`\n\n{field.description} "
                f"The same keys as [`{seen[repr(field.annotation)]}`](#{seen[repr(field.annotation)].lower()}).\n"
            )
        elif models:
            seen[repr(field.annotation)] = key
            sections.append(_section(key, field, models))
        else:
            scalars.append(_row(key, field))
    out = ["## Top-level keys", "", *_table(scalars), ""]
    out.extend(sections)
    return "\n".join(out)


def _section(key: str, field: Any, models: list[type]) -> str:
    """A section: a model's table, or for a mapping of models (`mcpServers.<name>`) one table per kind."""
    mapping = typing.get_origin(field.annotation) is dict
    path = f"{key}.<name>" if mapping else key
    lines = [f"## `{key}`", "", _doc(models[0]) if not mapping and _doc(models[0]) else field.description or "", ""]
    if mapping and len(models) > 1:
        for model in models:
            lines += [f"### {model.__name__} (`{path}`)", "", _doc(model), ""]
            lines += _model_tables(path, model, level=4)
    elif mapping:
        lines += _model_tables(path, models[0], level=3)
    else:
        lines += _model_tables(path, models[0], level=3)
    return "\n".join(lines)


def _model_tables(path: str, model: type, *, level: int) -> list[str]:
    """The model's fields as a table; a nested model's fields as a sub-table after it."""
    rows, nested = [], []
    for name, field in model.model_fields.items():
        key = field.alias or name
        sub = _models(field.annotation)
        origin = typing.get_origin(field.annotation)
        if sub and origin is None or sub and origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
            nested.append((f"{path}.{key}", field, sub[0]))
            rows.append(_row(f"{path}.{key}", field, default="see below"))
        elif sub and len(sub) == 1:  # a map or list of one model: its entries' keys below
            entry = f"{path}.{key}.<name>" if origin is dict else f"{path}.{key}[]"
            nested.append((entry, field, sub[0]))
            rows.append(_row(f"{path}.{key}", field))
        else:
            rows.append(_row(f"{path}.{key}", field))
    lines = [*_table(rows), ""]
    for sub_path, field, sub_model in nested:
        lines += [f"{'#' * level} `{sub_path}`", "", _doc(sub_model) or field.description or "", ""]
        lines += _model_tables(sub_path, sub_model, level=level + 1)
    return lines


def _table(rows: list[tuple[str, str, str, str]]) -> list[str]:
    lines = ["| key | type | default | description |", "|-----|------|---------|-------------|"]
    lines += [f"| {' | '.join(_cell(c) for c in row)} |" for row in rows]
    return lines


def _row(key: str, field: Any, *, default: str | None = None) -> tuple[str, str, str, str]:
    return (f"`{key}`", _type(field.annotation, field.metadata), default or _default(field), field.description or "")


def _cell(text: str) -> str:
    # A pipe would split the table's cell, a newline end its row.
    return text.replace("|", "&#124;").replace("\n", " ")


def _doc(model: type) -> str:
    doc = (model.__doc__ or "").strip()
    # A model without a docstring of its own inherits pydantic's; that one says nothing here.
    return (
        " ".join(doc.split())
        if doc and "BaseModel" not in doc and "Strict" not in model.__dict__.get("__qualname__", "")
        else ""
    )


def _models(annotation: Any) -> list[type]:
    """The pydantic models an annotation names (through unions, `Annotated`, containers)."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type] = []
    for arg in typing.get_args(annotation):
        found.extend(m for m in _models(arg) if m not in found)
    return found


_BOUNDS = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤"}


def _type(annotation: Any, metadata: list[Any] = ()) -> str:
    """A reader's spelling of a type: `int > 0`, `'llama' or 'openai'`, `list of str`."""
    base = _spell(annotation)
    bounds = [f"{_BOUNDS[k]} {getattr(m, k)}" for m in metadata for k in _BOUNDS if getattr(m, k, None) is not None]
    return f"`{base} {', '.join(bounds)}`" if bounds else f"`{base}`"


def _spell(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        inner = _spell(args[0])
        bounds = [f"{_BOUNDS[k]} {getattr(m, k)}" for m in args[1:] for k in _BOUNDS if getattr(m, k, None) is not None]
        return f"{inner} {', '.join(bounds)}" if bounds else inner
    if origin is typing.Literal:
        return " or ".join(json.dumps(a) for a in args)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        parts = [a for a in args if a is not type(None)]
        spelt = " or ".join(_spell(a) for a in parts)
        return f"{spelt} (optional)" if len(parts) < len(args) else spelt
    if origin is list:
        return f"list of {_spell(args[0])}"
    if origin is dict:
        return f"map of {_spell(args[0])} to {_spell(args[1])}"
    if annotation is typing.Any:
        return "any"
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " or ".join(json.dumps(member.value) for member in annotation)
    return getattr(annotation, "__name__", str(annotation))


def _default(field: Any) -> str:
    from pydantic import BaseModel
    from pydantic_core import PydanticUndefined

    if field.default_factory is not None:
        return "computed"
    value = field.default
    if value is PydanticUndefined:
        return "required"
    if value is None:
        return "unset"
    if isinstance(value, BaseModel):
        return "see below"
    if isinstance(value, (list, tuple)) and len(value) > 8:
        return f"`{json.dumps(list(value[:8]))[:-1]}, …]` ({len(value)} names)"
    return f"`{json.dumps(value, ensure_ascii=False)}`"
