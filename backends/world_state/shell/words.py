"""A parsed word made into the argument(s) bash makes of it: tilde, variables, splitting
of unquoted variables on blanks, then pathname expansion against the state's listings.

A variable the state could not follow (its value None) or a pattern in a directory
whose listing is not complete raises Unanswerable. A pattern that matches nothing
stays as written, as in bash without `nullglob`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable

from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR, FileSystem, join, normalize
from backends.world_state.shell.syntax import Word


def _magic(text: str) -> bool:
    """Whether unquoted text is a pattern: `*`, `?`, or a `[` closed by a later `]`
    (a lone `[`, as in `[ -f x ]`, is just a character)."""
    if "*" in text or "?" in text:
        return True
    start = text.find("[")
    return start >= 0 and "]" in text[start + 2 :]


Lookup = Callable[[str], str]  # a variable's value by name ("?" included)


def expand(word: Word, variable: Lookup, home: str, fs: FileSystem, cwd: str) -> list[str]:
    """The arguments `word` becomes (none, one or more)."""
    fields: list[list[tuple[str, bool]]] = [[]]  # per field: (text, quoted) pieces
    any_quoted = False
    for i, part in enumerate(word):
        if part.var:
            value = variable(part.text)
            if part.quoted:
                fields[-1].append((value, True))
                any_quoted = True
                continue
            if _magic(value):
                raise Unanswerable("a variable's value used as a pattern")
            split = value.split()
            if value[:1].isspace() and fields[-1]:
                fields.append([])
            for j, piece in enumerate(split):
                if j:
                    fields.append([])
                fields[-1].append((piece, True))
            if value[-1:].isspace() and split:
                fields.append([])
            continue
        text = part.text
        if i == 0 and not part.quoted and (text == "~" or text.startswith("~/")):
            fields[-1].append((home, True))
            text = text[1:]
        elif i == 0 and not part.quoted and text.startswith("~"):
            raise Unanswerable("~user is not expanded from state")
        fields[-1].append((text, part.quoted))
        any_quoted = any_quoted or part.quoted
    out: list[str] = []
    for pieces in fields:
        if not pieces:
            continue
        text = "".join(t for t, _ in pieces)
        if _magic("".join(t if not quoted else "x" * len(t) for t, quoted in pieces)):
            out.extend(_glob(pieces, fs, cwd))
        elif text or any_quoted or any(q for _, q in pieces):
            out.append(text)
    if not out and any_quoted:
        out.append("")
    return out


def expand_one(word: Word, variable: Lookup, home: str) -> str:
    """A word expanded without splitting or globbing (an assignment's value, a
    here-document); a redirection's target must not need either."""
    text = []
    for i, part in enumerate(word):
        if part.var:
            text.append(variable(part.text))
        elif i == 0 and not part.quoted and (part.text == "~" or part.text.startswith("~/")):
            text.append(home + part.text[1:])
        else:
            text.append(part.text)
    return "".join(text)


def redirect_target(word: Word, variable: Lookup, home: str) -> str:
    if any(not p.quoted and (p.var or _magic(p.text)) for p in word):
        raise Unanswerable("a redirection target that bash would split or glob")
    return expand_one(word, variable, home)


def _glob(pieces: list[tuple[str, bool]], fs: FileSystem, cwd: str) -> list[str]:
    pattern = "".join(t if not quoted else "".join(f"[{c}]" if c in "*?[]" else c for c in t) for t, quoted in pieces)
    if "[:" in pattern or "[!]" in pattern or "[^" in pattern:
        raise Unanswerable("a bracket pattern bash and Python read differently")
    absolute = pattern.startswith("/")
    folders_only = pattern.endswith("/")  # `*/`: directories, shown with their slash
    components = [c for c in pattern.split("/") if c]
    matches = ["/" if absolute else ""]
    for k, component in enumerate(components):
        last = k == len(components) - 1
        found = []
        for prefix in matches:
            directory = normalize(prefix or ".", cwd)
            if not _magic(component):
                found.append(prefix + _literal(component) + ("" if last and not folders_only else "/"))
                continue
            node = fs.lookup(directory)
            if node is None or node.kind != DIR:
                continue
            for name in fs.names(directory, hidden=component.startswith(".")):
                if (name.startswith(".") and not component.startswith(".")) or not fnmatch.fnmatchcase(name, component):
                    continue
                if not last or folders_only:
                    child = fs.nodes[join(directory, name)]
                    if child.kind is None:
                        raise Unanswerable(f"whether {name} is a directory is not known")
                    if child.kind != DIR:
                        continue
                found.append(prefix + name + ("" if last and not folders_only else "/"))
        matches = found
    existing = sorted(m for m in matches if fs.lookup(normalize(m, cwd)) is not None)
    if existing:
        return existing
    return ["".join(t for t, _ in pieces)]


def _literal(component: str) -> str:
    """A pattern component without wildcards, its [c] escapes undone."""
    out, i = [], 0
    while i < len(component):
        if component[i] == "[" and i + 2 < len(component) and component[i + 2] == "]":
            out.append(component[i + 1])
            i += 3
        else:
            out.append(component[i])
            i += 1
    return "".join(out)
