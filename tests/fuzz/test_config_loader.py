"""The config loader against any document: a Config, or a ConfigError whose every
line names the file and a line ("fuzz.yaml:N: ..."), never another exception and
never a hang (aliases that expand to billions of values, brackets nested thousands
deep, a value that contains itself)."""

from __future__ import annotations

import re

import yaml
from hypothesis import example, given
from hypothesis import strategies as st
from kit.fuzz import fuzz, tally
from pydantic import BaseModel

from router.config.root import Config, ConfigError, parse_config

WHERE = re.compile(r"^fuzz\.yaml:\d+: \S")


def _key_paths(model: type[BaseModel], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key path of the config's schema (`shell.pool.size`, …): the fuzzer
    writes values where the loader looks for them, not only at random names."""
    paths = []
    for name, field in model.model_fields.items():
        path = (*prefix, field.alias or name)
        paths.append(path)
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            paths += _key_paths(field.annotation, path)
    return paths


PATHS = _key_paths(Config)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=10,
)


@st.composite
def schema_shaped(draw) -> str:
    """A document setting a few of the schema's keys to any values."""
    document: dict = {}
    for path in draw(st.lists(st.sampled_from(PATHS), max_size=6)):
        node = document
        for key in path[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        node[path[-1]] = draw(VALUES)
    return yaml.safe_dump(document, allow_unicode=True)


def _laughs(levels: int) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "\n".join([*lines, f"rules: [*a{levels}]"])


RULES = st.lists(
    st.fixed_dictionaries(
        {
            "match": st.dictionaries(
                st.sampled_from(["tool", "server", "channel", "arguments", "path", "method", "command"]), VALUES
            )
        },
        optional={
            "route": st.sampled_from(["real", "sim", "replay", "shadow", "deny", "learned"]) | SCALARS,
            "reason": VALUES,
        },
    ),
    max_size=3,
).map(lambda rules: yaml.safe_dump({"rules": rules}, allow_unicode=True))
DOCUMENTS = schema_shaped() | RULES | st.text(max_size=300) | st.builds(yaml.safe_dump, VALUES)


@fuzz
@given(text=DOCUMENTS)
@example(text=_laughs(9))  # 10^10 values once expanded
@example(text="rules: " + "[" * 3000 + "]" * 3000)
@example(text="a: &a [*a]")
@example(text="mcpServers: {x: &s {command: python, env: *s}}")
@example(text="\ufeffmode: sim\n\x00")
@example(text="' ':")  # a key that is one space: quoted, so the message still names it
def test_any_document_loads_or_names_file_and_line(text: str) -> None:
    tally("config loader")
    try:
        config = parse_config(text, source="fuzz.yaml")
    except ConfigError as exc:
        problems = str(exc).splitlines()
        assert problems and all(WHERE.match(line) for line in problems), str(exc)
    else:
        assert isinstance(config, Config)
