"""What a command gets when it runs against the state, and the pieces they all use:
GNU-style option parsing and coreutils' ways of quoting a file name in a message."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from backends.world_state.shell import sandbox
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR, FILE, Node, normalize, parent_of
from backends.world_state.shell.state import ShellWorld


@dataclass(slots=True)
class Context:
    """One command's run: the working copy of the world (a pipeline stage's cwd and
    variables are its own), its input, and where its output goes."""

    world: ShellWorld
    line: int  # the row the command starts on, for bash's own messages
    emit: Callable[[int, str | None], None]  # (fd, text); None: text the state does not know
    stdin_text: str | None = ""  # None: input the state does not know
    stdin_size: int | None = None  # the size of a regular file on stdin (`< f`); None: a pipe
    invented: list[bool] = field(default_factory=lambda: [False])  # shared by the line's commands
    writes_to: frozenset[str] = frozenset()  # files the command's output is redirected into
    used_stdin: bool = False  # whether the command read its input (a pipeline's order depends on it)

    def stdin(self) -> str | None:
        """The command's input (read to its end)."""
        self.used_stdin = True
        return self.stdin_text

    def out(self, text: str | None) -> None:
        if text != "":
            self.emit(1, text)

    def err(self, text: str) -> None:
        self.emit(2, text)

    def bash_error(self, text: str) -> None:
        self.emit(2, sandbox.bash_error(self.line, text))

    def path(self, operand: str) -> str:
        return normalize(operand, self.world.cwd)

    def lookup(self, operand: str) -> Node | None:
        """The node an operand names (None: it does not exist). An operand ending in `/`
        names a directory: a file there does not resolve (`missing` says why)."""
        node = self.world.fs.lookup(self.path(operand))
        if node is not None and operand.endswith("/") and node.kind != DIR:
            if node.kind is None:
                raise Unanswerable(f"whether {operand} is a directory is not known")
            return None
        return node

    def read(self, path: str) -> str:
        """A file's content (Unanswerable when the state does not hold it)."""
        return _known(self.read_or_unknown(path), path)

    def read_or_unknown(self, path: str) -> str | None:
        """A file's content, None when the state does not hold it (for commands that pass
        content on without looking at it: cat, a redirection)."""
        if path in self.writes_to:
            raise Unanswerable("a file read while the same command writes it")
        node = self.world.fs.nodes[path]
        if node.invented:
            self.invented[0] = True
        return node.content

    def may_change(self, directory: str) -> None:
        """Entries of `directory` may be made or removed: it is the agent's, or writable by
        all (/tmp). Elsewhere (the image's read-only folders, what the state does not
        know) the answer is the model's."""
        node = self.world.fs.nodes.get(directory)
        if node is None or not (node.owner == sandbox.USER or node.mode & 0o002):
            raise Unanswerable(f"a change in {directory}, not the agent's")

    def write(self, path: str, text: str | None, *, append: bool) -> None:
        """Writes (or appends) a file's content; a new file gets the umask's mode. Content
        derived from invented content is invented too; unknown text makes it unknown."""
        fs = self.world.fs
        old = fs.nodes.get(path)
        if old is None:
            self.may_change(parent_of(path))
        invented = self.invented[0]
        if old is not None and append:
            text = None if text is None or old.content is None else old.content + text
            invented = invented or old.invented
        mode = old.mode if old is not None else sandbox.FILE_MODE
        fs.put(path, Node(FILE, mode, content=text, invented=invented, mtime=self.world.clock))

    def make_dir(self, path: str) -> None:
        self.may_change(parent_of(path))
        self.world.fs.put(path, Node(DIR, sandbox.DIR_MODE, mtime=self.world.clock))

    def missing(self, operand: str) -> str:
        """Why an operand does not resolve, as the C library says it."""
        path = self.path(operand)
        if operand.endswith("/") and (node := self.world.fs.nodes.get(path)) is not None and node.kind != DIR:
            return "Not a directory"
        return self.world.fs.missing_reason(path)


Command = Callable[[Context, list[str]], int]


def _known(text: str | None, path: str) -> str:
    if text is None:
        raise Unanswerable(f"the content of {path} is not known")
    return text


def split_lines(text: str) -> list[str]:
    """Lines as coreutils sees them: ended by newlines only, each kept with its newline
    (a last line without one is a line too)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def options(args: list[str], flags: str, *, valued: str = "", program: str = "") -> tuple[dict[str, str], list[str]]:
    """GNU getopt's reading of `args`: short options anywhere (clustered, `-n5` or `-n 5`
    for those in `valued`), operands in order, `--` ends options. Returns ({flag: value
    or ""}, operands). An option not in `flags`/`valued` raises Unanswerable (the
    command's answer for it is the model's to write)."""
    found: dict[str, str] = {}
    operands: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            operands.extend(args[i:])
            break
        if not arg.startswith("-") or arg == "-":
            operands.append(arg)
            continue
        if arg.startswith("--"):
            raise Unanswerable(f"{program} {arg} is not answered from state")
        k = 1
        while k < len(arg):
            letter = arg[k]
            if letter in valued:
                value = arg[k + 1 :]
                if not value:
                    if i >= len(args):
                        raise Unanswerable(f"{program} -{letter} without its value")
                    value = args[i]
                    i += 1
                found[letter] = value
                break
            if letter not in flags:
                raise Unanswerable(f"{program} -{letter} is not answered from state")
            found[letter] = ""
            k += 1
    return found, operands


# --- quoting of names in messages (gnulib quotearg, LANG=C.UTF-8) -----------------------------

_SHELL_SPECIAL = re.compile(r"[\s!\"$&'()*:;<=>?\[\\\]^`{|}]|^[#~]")


def _checked(name: str) -> str:
    if "'" in name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise Unanswerable("a file name coreutils quotes in its own way")
    return name


def quote_if_needed(name: str) -> str:
    """cat, wc: the name as it is, single-quoted only when a shell would need it (or it
    holds a colon, which would blur the message's own)."""
    return f"'{name}'" if _SHELL_SPECIAL.search(_checked(name)) or not name else name


def quote_always(name: str) -> str:
    """ls, rm, cp, mv, touch, head, tail: always single-quoted."""
    return f"'{_checked(name)}'"


def quote_locale(name: str) -> str:
    """mkdir, find: the locale's quotation marks."""
    return f"\u2018{_checked(name)}\u2019"


def usage_error(ctx: Context, program: str, text: str) -> int:
    ctx.err(f"{program}: {text}\nTry '{program} --help' for more information.\n")
    return 1
