"""Reading a config's YAML safely: bounds on the document's shape, checked before it
is built into values, and YAML's errors as one line naming where.

YAML lets a small file describe an enormous one: aliases repeat a node without
copying it (the "billion laughs": ten aliases of ten aliases of ... a 1 KB file
that expands to 10^9 values), and brackets nest without limit. Validating such a
document walks every expanded value, and PyYAML composes nesting by recursion, so
either hangs the loader or ends it with a RecursionError traceback. A config is a
few hundred values: these limits are far above any real one, and a document past
them gets a clear error naming its line.
"""

from __future__ import annotations

import yaml

MAX_DEPTH = 64  # nested mappings and sequences
MAX_VALUES = 100_000  # values once every alias is expanded


class DocumentTooLarge(ValueError):
    """The document is past a limit; `line` (1-based) is where it went past."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(problem)
        self.line = line


def check_depth(text: str) -> None:
    """Raise DocumentTooLarge where collections nest deeper than MAX_DEPTH. Reads
    the parser's events (iterative), before anything recursive sees the document."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1 if event.start_mark is not None else 1  # the parser marks every event
                raise DocumentTooLarge(line, f"values nest more than {MAX_DEPTH} levels deep")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def check_expanded_size(root: yaml.Node | None) -> None:
    """Raise DocumentTooLarge when the composed document, its aliases expanded, holds
    more than MAX_VALUES values, or a value contains itself. Counted without
    expanding: a node reached again through an alias has its size from the first time."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # the nodes being counted: the path from the root

    def size(node: yaml.Node) -> int:
        if id(node) in open_nodes:  # `a: &a [*a]`: a value that contains itself never ends
            raise DocumentTooLarge(node.start_mark.line + 1, "an alias refers to a value that contains it")
        known = sizes.get(id(node))
        if known is not None:
            return known
        open_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(key) + size(value) for key, value in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(item) for item in node.value)
        else:
            total = 1
        open_nodes.discard(id(node))
        sizes[id(node)] = total
        if total > MAX_VALUES:
            raise DocumentTooLarge(
                node.start_mark.line + 1, f"the document expands to more than {MAX_VALUES:,} values through its aliases"
            )
        return total

    if root is not None:
        size(root)


def describe_yaml_error(exc: yaml.YAMLError, text: str) -> tuple[int, str]:
    """(1-based line, one-line problem) of a YAML error. A syntax error has a mark;
    an unreadable character (NUL, a lone surrogate) only a position in the text."""
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        return mark.line + 1, str(getattr(exc, "problem", None) or exc).splitlines()[0]
    position = getattr(exc, "position", None)
    line = text.count("\n", 0, position) + 1 if isinstance(position, int) else 1
    return line, (str(exc).splitlines() or ["unreadable document"])[0]
