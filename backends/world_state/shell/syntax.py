"""A command line's structure as the executor runs it (parse.py builds it): statements of
and-or lists of pipelines of simple commands, with words whose quoting is kept."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Part:
    text: str
    quoted: bool = False  # no splitting, no globbing, no tilde
    var: bool = False  # `text` is a variable's name ($X, ${X}, $?)


Word = tuple[Part, ...]


@dataclass(frozen=True, slots=True)
class Redirect:
    fd: int
    op: str  # ">", ">>", "<", "dup" (fd>&to_fd), "&>", "&>>", "<<" (here-document, here-string)
    target: Word = ()
    to_fd: int = -1
    body: Word = ()  # a here-document's or here-string's text


@dataclass(frozen=True, slots=True)
class Simple:
    words: tuple[Word, ...]
    assignments: tuple[tuple[str, Word], ...] = ()
    redirects: tuple[Redirect, ...] = ()
    line: int = 0  # the row the command starts on (bash names it in its own messages)


@dataclass(frozen=True, slots=True)
class AndOr:
    pipelines: tuple[tuple[Simple, ...], ...]
    operators: tuple[str, ...] = ()  # "&&" or "||" between consecutive pipelines
    negated: frozenset[int] = frozenset()  # the pipelines written with `!` before them

    def then(self, operator: str, rest: AndOr) -> AndOr:
        """This list, `operator`, then `rest`."""
        shift = len(self.pipelines)
        return AndOr(
            self.pipelines + rest.pipelines,
            (*self.operators, operator, *rest.operators),
            self.negated | {i + shift for i in rest.negated},
        )


Script = tuple[AndOr, ...]
