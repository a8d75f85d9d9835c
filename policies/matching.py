"""Value patterns used by rules: globs, `re:` regular expressions, literals,
dotted paths into nested arguments, and JSONPath for paths starting with `$`."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from typing import Any

from policies.errors import PolicyConfigError

Matcher = Callable[[Any], bool]
ArgumentLookup = Callable[[Any], list[Any]]

MISSING = object()
_MISSING = MISSING  # the older private name


def compile_pattern(pattern: Any) -> Matcher:
    """Turn one pattern from a config file into a predicate over a value.

    - `"re:<regex>"`: the regex is searched in the value's text (anchor with ^ and $);
    - any other string: a glob over the value's text (`*`, `?`, `[abc]`);
    - anything else (number, bool, null, list, mapping): equality.

    Raises PolicyConfigError for an invalid regex, naming it.
    """
    if isinstance(pattern, str):
        if pattern.startswith("re:"):
            source = pattern[3:]
            try:
                regex = re.compile(source)
            except re.error as exc:
                raise PolicyConfigError(f"invalid regular expression {source!r}: {exc}") from exc
            return lambda value: value is not MISSING and regex.search(_as_text(value)) is not None
        if not any(ch in pattern for ch in "*?["):
            return lambda value: value is not MISSING and _as_text(value) == pattern
        return lambda value: value is not MISSING and fnmatch.fnmatchcase(_as_text(value), pattern)
    return lambda value: value is not MISSING and value == pattern


def compile_argument_path(path: str) -> ArgumentLookup:
    """A function from a call's arguments to the values at `path` (none: [MISSING]).

    `a.b.0.c` follows mappings and list indexes; `$…` is JSONPath (`$.items[*].id`,
    `$..token`), whose every match is tried. Raises PolicyConfigError for bad JSONPath."""
    if not path.startswith("$"):
        return lambda arguments: [lookup(arguments, path)]
    from jsonpath_ng.exceptions import JSONPathError
    from jsonpath_ng.ext import parse

    try:
        expression = parse(path)
    except JSONPathError as exc:
        raise PolicyConfigError(f"invalid JSONPath {path!r}: {exc}") from exc

    def values(arguments: Any) -> list[Any]:
        found = [match.value for match in expression.find(arguments)]
        return found or [MISSING]

    return values


def lookup(data: Any, dotted_path: str) -> Any:
    """Follow `a.b.0.c` into nested mappings and lists; a missing step yields a
    sentinel that no pattern matches."""
    current = data
    for part in dotted_path.split("."):
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return MISSING
    return current


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
