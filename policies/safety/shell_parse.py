"""Bash command lines as the simple commands they run, through tree-sitter-bash.

tree-sitter's bash grammar parses what bash parses and tolerates errors (the tree
then says so), so a command line is analysed the way bash will read it: quoting
and escapes are undone, variables assigned earlier in the line are substituted,
commands inside `$(…)`, `<(…)`, subshells, lists, loops and function bodies are
found, and wrappers are unwrapped (`sudo`, `doas`, `env`, `nice`, `timeout`,
`xargs`, `bash -c '…'`, `eval …`, `find -exec …`), their scripts parsed in turn.

Parses of repeated command lines are cached: agents repeat themselves.
"""

from __future__ import annotations

import codecs
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache

MAX_DEPTH = 4  # bash -c inside bash -c inside …: deeper nesting is not analysed
DYNAMIC = "\x00"  # marks text only known at run time (an unknown variable, a substitution)

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "busybox sh", "fish"})
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_DQ_ESCAPE = re.compile(r"\\([$`\"\\\n])")


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


_local = threading.local()


def _parser():
    parser = getattr(_local, "parser", None)
    if parser is None:
        import tree_sitter
        import tree_sitter_bash

        parser = _local.parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return parser


@lru_cache(maxsize=4096)
def parse_shell(command: str, depth: int = 0) -> ParsedShell:
    """The simple commands, file writes and parse errors of a bash command line."""
    tree = _parser().parse(command.encode("utf-8", "surrogatepass"))
    walker = _Walker(depth)
    walker.visit(tree.root_node)
    if tree.root_node.has_error:
        walker.errors.append(_first_error(tree.root_node))
    return ParsedShell(
        commands=tuple(walker.commands),
        writes=tuple(walker.writes),
        functions=tuple(walker.functions),
        errors=tuple(walker.errors),
        too_deep=walker.too_deep,
    )


def _first_error(node) -> str:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.is_error or current.is_missing:
            where = current.start_point
            what = f"missing {current.type!r}" if current.is_missing else "unexpected text"
            return f"{what} at line {where[0] + 1}, column {where[1] + 1}"
        stack.extend(reversed(current.children))
    return "syntax error"


@dataclass(slots=True)
class _Walker:
    depth: int
    env: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    commands: list[SimpleCommand] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    functions: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    too_deep: bool = False

    # --- structure -------------------------------------------------------------------

    def visit(self, node, *, stdin_text: str = "", upstream: tuple[str, ...] = ()) -> None:
        kind = node.type
        if kind == "command":
            self.command(node, stdin_text=stdin_text, upstream=upstream)
        elif kind == "variable_assignment":
            self.assign(node)
        elif kind == "pipeline":
            self.pipeline(node.named_children, stdin_text=stdin_text, upstream=upstream)
        elif kind == "redirected_statement":
            self.redirected(node, upstream=upstream)
        elif kind == "function_definition":
            self.function(node)
        elif kind in ("heredoc_body", "comment"):
            return
        else:
            for child in node.named_children:
                self.visit(child, stdin_text=stdin_text, upstream=upstream)

    def pipeline(self, stages, *, stdin_text: str = "", upstream: tuple[str, ...] = ()) -> None:
        feeding = list(upstream)
        for i, stage in enumerate(stages):
            first = len(self.commands)
            self.visit(stage, stdin_text=stdin_text if i == 0 else "", upstream=tuple(feeding))
            for produced in self.commands[first:]:
                feeding.append(" ".join((produced.text(), produced.stdin_text)).strip())

    def redirected(self, node, *, upstream: tuple[str, ...]) -> None:
        body = node.child_by_field_name("body")
        stdin_parts: list[str] = []
        piped = None  # `cmd <<EOF | next`: the grammar hangs the pipeline under the heredoc
        for redirect in node.children_by_field_name("redirect"):
            if redirect.type == "file_redirect":
                self.file_redirect(redirect)
            elif redirect.type == "heredoc_redirect":
                for child in redirect.named_children:
                    if child.type == "heredoc_body":
                        stdin_parts.append(_node_text(child))
                    elif child.type in ("pipeline", "command", "list"):
                        piped = child
            elif redirect.type == "herestring_redirect":
                stdin_parts.extend(self.word(child) for child in redirect.named_children)
        stdin_text = "\n".join(stdin_parts)
        if body is None:
            return
        if piped is not None:
            stages = [body, *(piped.named_children if piped.type == "pipeline" else [piped])]
            self.pipeline(stages, stdin_text=stdin_text, upstream=upstream)
        else:
            self.visit(body, stdin_text=stdin_text, upstream=upstream)

    def file_redirect(self, node) -> None:
        operator = "".join(_node_text(c) for c in node.children if not c.is_named)
        destination = node.child_by_field_name("destination")
        if destination is None:
            return
        target = self.word(destination)  # also visits substitutions in it
        duplicates_fd = operator in (">&", "<&") and (destination.type == "number" or target == "-")
        if ">" in operator and not duplicates_fd:
            self.writes.append(Write(target, truncates=">>" not in operator))

    def function(self, node) -> None:
        name_node = node.child_by_field_name("name")
        first = len(self.commands)
        body = node.child_by_field_name("body")
        if body is not None:
            self.visit(body)
        name = _node_text(name_node) if name_node is not None else ""
        self.functions.append((name, tuple(c.program for c in self.commands[first:])))

    def assign(self, node) -> None:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is not None and name.type == "variable_name":
            self.env[_node_text(name)] = self.word(value) if value is not None else ""

    def command(self, node, *, stdin_text: str, upstream: tuple[str, ...]) -> None:
        argv: list[str] = []
        substituted_from = len(self.commands)
        for child in node.named_children:
            if child.type == "variable_assignment":  # FOO=1 cmd: for this command only
                value = child.child_by_field_name("value")
                if value is not None:
                    self.word(value)
            elif child.type == "command_name":
                argv.extend(w for c in child.named_children for w in self.split_word(c))
            elif child.type in ("file_redirect", "herestring_redirect"):
                if child.type == "file_redirect":
                    self.file_redirect(child)
                else:
                    stdin_text = "\n".join([stdin_text, *(self.word(c) for c in child.named_children)]).strip()
            elif child.is_named:
                argv.extend(self.split_word(child))
        substituted = tuple(c.program for c in self.commands[substituted_from:])
        if argv and argv[0] == "alias":
            for definition in argv[1:]:
                name, eq, value = definition.partition("=")
                if eq:
                    self.aliases[name] = value
        elif argv and argv[0] in self.aliases:  # an alias defined earlier on the line (interactive shells expand them)
            argv = [*self.aliases[argv[0]].split(), *argv[1:]]
        if argv:
            self.add(tuple(argv), (), stdin_text, upstream, substituted)

    # --- words -----------------------------------------------------------------------

    def word(self, node) -> str:
        """The text bash makes of one word (commands in substitutions are visited)."""
        kind = node.type
        if kind == "word":
            return _ESCAPE.sub(r"\1", _node_text(node))
        if kind == "raw_string":
            return _node_text(node)[1:-1]
        if kind == "ansi_c_string":
            return _ansi_c(_node_text(node)[2:-1])
        if kind in ("string", "translated_string"):
            return "".join(self.string_part(c) for c in node.named_children)
        if kind == "concatenation":
            return "".join(self.word(c) for c in node.named_children)
        if kind in ("simple_expansion", "expansion"):
            return self.expansion(node)
        if kind in ("command_substitution", "process_substitution"):
            for child in node.named_children:
                self.visit(child)
            return DYNAMIC + "(" + _node_text(node)[2:-1].strip() + ")"
        if kind in ("number", "brace_expression", "arithmetic_expansion"):
            return _node_text(node)
        for child in node.named_children:  # anything else: visit what it runs
            self.visit(child)
        return _node_text(node)

    def split_word(self, node) -> list[str]:
        """An unquoted `$VAR` splits on whitespace (`CMD="rm -rf"; $CMD /`)."""
        text = self.word(node)
        if node.type in ("simple_expansion", "expansion") and DYNAMIC not in text:
            return text.split() or [""]
        return [text]

    def string_part(self, node) -> str:
        if node.type == "string_content":
            return _DQ_ESCAPE.sub(r"\1", _node_text(node))
        return self.word(node)

    def expansion(self, node) -> str:
        names = [c for c in node.named_children if c.type in ("variable_name", "special_variable_name")]
        for child in node.named_children:
            if child.type not in ("variable_name", "special_variable_name"):
                self.word(child)  # ${x:-$(cmd)} runs cmd
        if len(names) == 1 and node.named_child_count == 1 and (name := _node_text(names[0])) in self.env:
            return self.env[name]
        return DYNAMIC + _node_text(node).lstrip("$")

    # --- unwrapping --------------------------------------------------------------------

    def add(self, argv: tuple[str, ...], via: tuple[str, ...], stdin_text: str, upstream: tuple[str, ...], substituted: tuple[str, ...]) -> None:
        self.commands.append(SimpleCommand(argv, via, stdin_text, upstream, substituted))
        inner = unwrap(argv)
        if inner is None and stdin_text and is_shell(program_name(argv[0])) and all(a.startswith("-") for a in argv[1:]):
            inner = (f"{program_name(argv[0])} <<", stdin_text)  # a shell reading its script from a here-document
        if inner is None:
            return
        wrapper, payload = inner
        if isinstance(payload, str) and DYNAMIC in payload:
            # The script itself is only known at run time (`eval "$x"`, `sh -c "$(curl …)"`).
            self.commands.append(SimpleCommand((payload,), (*via, wrapper), stdin_text, upstream, substituted))
        elif isinstance(payload, str):  # a script: bash -c, eval, su -c, ssh
            if self.depth + 1 >= MAX_DEPTH:
                self.too_deep = True
                return
            nested = parse_shell(payload, self.depth + 1)
            self.writes.extend(nested.writes)
            self.functions.extend(nested.functions)
            self.errors.extend(f"in {wrapper}: {error}" for error in nested.errors)
            self.too_deep = self.too_deep or nested.too_deep
            for command in nested.commands:
                self.commands.append(
                    SimpleCommand(command.argv, (*via, wrapper, *command.via), command.stdin_text or stdin_text, command.upstream or upstream, command.substituted)
                )
        elif payload:
            self.add(payload, (*via, wrapper), stdin_text, upstream, substituted)
        elif wrapper in ("sudo", "doas", "run0") and any(a in ("-s", "-i", "--shell", "--login") for a in argv[1:]):
            # a root shell that reads its commands from the input (`curl … | sudo -s`)
            self.commands.append(SimpleCommand(("sh",), (*via, wrapper), stdin_text, upstream, substituted))


def _node_text(node) -> str:
    return node.text.decode("utf-8", "surrogateescape") if node.text is not None else ""


def _ansi_c(body: str) -> str:
    try:
        return codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return body


# Options that take a value, per wrapper (so the value is not taken for the program).
_SUDO_VALUE_OPTIONS = frozenset("ugCDhprtUTg") | {"--user", "--group", "--host", "--prompt", "--role", "--type", "--chdir", "--close-from", "--other-user"}
_TIMEOUT_VALUE_OPTIONS = {"-s", "--signal", "-k", "--kill-after"}
_XARGS_VALUE_OPTIONS = {"-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a", "--max-args", "--max-procs", "--delimiter", "--arg-file", "--replace"}


def unwrap(argv: tuple[str, ...]) -> tuple[str, tuple[str, ...] | str] | None:
    """(wrapper, what it runs) for a wrapper command: the inner argv, or a script to
    parse (`bash -c`, `eval`, `su -c`, `ssh host cmd`); None for any other command."""
    if not argv:
        return None
    name = program_name(argv[0])
    rest = argv[1:]
    if name in ("sudo", "doas", "run0"):
        return name, _after_options(rest, value_options=_SUDO_VALUE_OPTIONS, short_values=True)
    if name == "env":
        for j, arg in enumerate(rest):
            if arg in ("-S", "--split-string") and j + 1 < len(rest):
                return "env -S", " ".join(rest[j + 1 :])
        i = 0
        while i < len(rest) and (rest[i].startswith("-") or "=" in rest[i]):
            i += 2 if rest[i] in ("-u", "--unset", "-C", "--chdir", "-S") else 1
        return name, rest[i:]
    if name == "command" and any(a in ("-v", "-V") for a in rest[:2]):
        return None  # `command -v git` looks a program up, it does not run it
    if name in ("nice", "ionice", "nohup", "time", "command", "builtin", "exec", "setsid", "stdbuf", "chronic", "unbuffer", "caffeinate"):
        return name, _after_options(rest, value_options={"-n", "-c", "--adjustment", "-i", "-o", "-e", "-p"}, short_values=False)
    if name == "timeout":
        after = _after_options(rest, value_options=_TIMEOUT_VALUE_OPTIONS, short_values=False)
        return name, after[1:]  # the duration
    if name == "xargs":
        return name, _after_options(rest, value_options=_XARGS_VALUE_OPTIONS, short_values=False)
    if name == "watch":
        after = _after_options(rest, value_options={"-n", "--interval", "-d"}, short_values=False)
        return (name, " ".join(after)) if len(after) == 1 else (name, after)
    if name == "busybox" and rest and rest[0] not in ("sh", "ash", "bash"):
        return name, rest  # busybox rm -rf …: the applet runs
    if name in _SHELLS or (name == "busybox" and rest[:1] in (("sh",), ("ash",), ("bash",))):
        if name == "busybox":
            rest = rest[1:]
        for i, arg in enumerate(rest):
            if arg == "--":
                break
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
                return f"{name} -c", rest[i + 1] if i + 1 < len(rest) else ""
            if not arg.startswith("-"):
                break
        return None
    if name == "eval":
        return name, " ".join(rest)
    if name in ("su", "runuser"):
        for i, arg in enumerate(rest):
            if arg in ("-c", "--command") and i + 1 < len(rest):
                return f"{name} -c", rest[i + 1]
        return None
    if name == "ssh":
        after = _after_options(rest, value_options=set("bcDEeFIiJLlmOopQRSWw"), short_values=True)
        return ("ssh", " ".join(after[1:])) if len(after) > 1 else None
    if name == "find":
        for i, arg in enumerate(rest):
            if arg in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next((j for j in range(i + 1, len(rest)) if rest[j] in (";", "+", "\\;")), len(rest))
                return f"find {arg}", rest[i + 1 : end]
        return None
    return None


def _after_options(args: tuple[str, ...], *, value_options: set[str] | frozenset[str], short_values: bool) -> tuple[str, ...]:
    """The arguments after a wrapper's own options (and their values)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return args[i + 1 :]
        if not arg.startswith("-") or arg == "-":
            break
        if arg in value_options or (short_values and len(arg) == 2 and arg[1] in value_options):
            i += 2
            continue
        i += 1
    return args[i:]


def is_shell(name: str) -> bool:
    return name in _SHELLS
