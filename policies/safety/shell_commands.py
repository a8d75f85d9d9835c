"""What a parsed bash command line is made of: the simple commands it runs (their
arguments unquoted, as bash passes them), the files its redirections write, and
the functions it defines. `shell_parse` builds these; the classifier reads them."""

from __future__ import annotations

from dataclasses import dataclass

DYNAMIC = "\x00"  # marks text only known at run time (an unknown variable, a substitution)


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One program run: its arguments as bash will pass them, unquoted."""

    argv: tuple[str, ...]
    via: tuple[str, ...] = ()  # the wrappers it was found in, outermost first (sudo, bash -c, xargs…)
    stdin_text: str = ""  # here-documents and here-strings it reads
    upstream: tuple[str, ...] = ()  # argv and input text of the earlier stages of its pipeline
    substituted: tuple[str, ...] = ()  # programs run inside its arguments' `$(…)` / `<(…)`

    @property
    def program(self) -> str:
        return program_name(self.argv[0]) if self.argv else ""

    @property
    def dynamic_program(self) -> bool:
        return bool(self.argv) and DYNAMIC in self.argv[0]

    def text(self) -> str:
        return " ".join(arg.replace(DYNAMIC, "$") for arg in self.argv)


@dataclass(frozen=True, slots=True)
class Write:
    """A redirection that writes a file: `>`/`>|`/`&>` truncate it, `>>` appends."""

    target: str
    truncates: bool


@dataclass(frozen=True, slots=True)
class ParsedShell:
    commands: tuple[SimpleCommand, ...]
    writes: tuple[Write, ...]
    functions: tuple[tuple[str, tuple[str, ...]], ...]  # (name, programs its body runs)
    errors: tuple[str, ...]  # what the parser could not parse (empty: the whole line parsed)
    too_deep: bool = False


def program_name(word: str) -> str:
    """`/usr/bin/rm` -> `rm`; `\\rm` was unescaped already."""
    return word.rsplit("/", 1)[-1] if "/" in word and not word.endswith("/") else word
