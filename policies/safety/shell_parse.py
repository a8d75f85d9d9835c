"""Bash command lines as the simple commands they run, through tree-sitter-bash.

tree-sitter's bash grammar parses what bash parses and tolerates errors (the tree
then says so), so a command line is analysed the way bash will read it: quoting
and escapes are undone, variables assigned earlier in the line are substituted,
commands inside `$(…)`, `<(…)`, subshells, lists, loops and function bodies are
found, and wrappers are unwrapped (`sudo`, `doas`, `env`, `nice`, `timeout`,
`xargs`, `bash -c '…'`, `eval …`, `find -exec …`), their scripts parsed in turn.

Parses of repeated command lines are cached: agents repeat themselves. What a
parse produces is in `shell_commands`; which commands wrap others, in
`shell_wrappers`.
"""

from __future__ import annotations

import codecs
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache

from policies.safety.shell_commands import DYNAMIC, ParsedShell, SimpleCommand, Write, program_name
from policies.safety.shell_wrappers import is_shell, unwrap

MAX_DEPTH = 4  # bash -c inside bash -c inside …: deeper nesting is not analysed
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_DQ_ESCAPE = re.compile(r"\\([$`\"\\\n])")


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

    def add(
        self,
        argv: tuple[str, ...],
        via: tuple[str, ...],
        stdin_text: str,
        upstream: tuple[str, ...],
        substituted: tuple[str, ...],
    ) -> None:
        self.commands.append(SimpleCommand(argv, via, stdin_text, upstream, substituted))
        inner = unwrap(argv)
        if (
            inner is None
            and stdin_text
            and is_shell(program_name(argv[0]))
            and all(a.startswith("-") for a in argv[1:])
        ):
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
                    SimpleCommand(
                        command.argv,
                        (*via, wrapper, *command.via),
                        command.stdin_text or stdin_text,
                        command.upstream or upstream,
                        command.substituted,
                    )
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
