"""A bash command line's structure, from tree-sitter-bash, for the executor to run.

`parse_line(text) -> Script` (syntax.py): statements (`;`, newlines) of and-or lists
(`&&`, `||`) of pipelines of simple commands, each with its words (quoting kept: which
parts were quoted, which are variables), its prefix assignments and its redirections
(`>`, `>>`, `<`, `n>&m`, `&>`, here-documents and here-strings). Words are expanded at run time (a
variable set earlier on the line changes a later word), by words.py.

Whatever the executor does not run raises Unanswerable here, before anything runs:
syntax errors, command substitution, arithmetic, brace expansion, subshells, functions,
loops and conditionals, background jobs, `[[ ]]`. (policies/safety/shell_parse.py walks
the same grammar for the safety gate; backends may not import policies, and the two want
different things: it finds every command a line might run, this runs a few exactly.)
"""

from __future__ import annotations

import codecs
import re
import threading
from functools import lru_cache
from typing import Any

from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.syntax import AndOr, Part, Redirect, Script, Simple, Word

_local = threading.local()
_EXPANSIONS = ("simple_expansion", "expansion", "command_substitution", "arithmetic_expansion", "process_substitution")
_WORDISH = (
    "word",
    "string",
    "raw_string",
    "ansi_c_string",
    "number",
    "concatenation",
    "simple_expansion",
    "expansion",
    "test_operator",
)
_BRACES = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_DQ_ESCAPE = re.compile(r"\\([$`\"\\\n])")
_HEREDOC_ESCAPE = re.compile(r"\\([$`\\\n])")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def bash_parser() -> Any:
    """This thread's tree-sitter-bash parser (parsers are not shared between threads)."""
    parser = getattr(_local, "parser", None)
    if parser is None:
        import tree_sitter
        import tree_sitter_bash

        parser = _local.parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return parser


@lru_cache(maxsize=2048)
def parse_line(text: str) -> Script:
    """The structure of a command line. Raises Unanswerable for what the executor does not run."""
    source = text.encode("utf-8", "surrogateescape")
    tree = bash_parser().parse(source)
    if tree.root_node.has_error:
        raise Unanswerable("the command line does not parse")
    return _Builder(source).program(tree.root_node)


class _Builder:
    def __init__(self, source: bytes) -> None:
        self.source = source

    def text(self, node: Any, start: int | None = None, end: int | None = None) -> str:
        return self.source[node.start_byte if start is None else start : node.end_byte if end is None else end].decode(
            "utf-8", "surrogateescape"
        )

    # --- structure -------------------------------------------------------------------------

    def program(self, node: Any) -> Script:
        statements: list[AndOr] = []
        for child in node.children:
            if child.type == "&":
                raise Unanswerable("background jobs are not run from state")
            if child.is_named and child.type != "comment":
                statements.append(self.and_or(child))
        return tuple(statements)

    def and_or(self, node: Any) -> AndOr:
        if node.type == "list":
            left, op, right = node.children
            return self.and_or(left).then(op.type, self.and_or(right))
        if node.type == "negated_command":
            inner = self.and_or(node.named_children[0])
            if len(inner.pipelines) != 1:
                raise Unanswerable("! before a list is not run from state")
            return AndOr(inner.pipelines, (), frozenset() if inner.negated else frozenset({0}))
        if node.type == "redirected_statement":
            heredoc = next((c for c in node.children_by_field_name("redirect") if c.type == "heredoc_redirect"), None)
            if heredoc is not None:
                return self.heredoc_statement(node, heredoc)
            body = node.child_by_field_name("body")
            if body is not None and body.type in ("pipeline", "list"):
                # `a | b > f`, `a || b > f`: the grammar hangs the redirections on the whole;
                # bash gives them to the last command.
                inner, extra = self.and_or(body), list[Word]()
                redirects = self.redirects(node, extra)
                *before, stages = inner.pipelines
                last = stages[-1]
                stages = (
                    *stages[:-1],
                    Simple(last.words + tuple(extra), last.assignments, last.redirects + redirects, last.line),
                )
                return AndOr((*before, stages), inner.operators, inner.negated)
        if node.type == "pipeline":
            return AndOr((tuple(self.stages(node)),))
        return AndOr(((self.simple(node),),))

    def heredoc_statement(self, node: Any, heredoc: Any) -> AndOr:
        """`cat <<EOF > f | wc && next`: the grammar hangs the rest of the line (a pipeline's
        further stages, an and-or list's next part) under the here-document."""
        command = self.simple(node)  # the command with its own redirections, the here-document's included
        stages = [command]
        rest: tuple[str, AndOr] | None = None
        pending_op = None
        for child in heredoc.children:
            if child.type in ("&&", "||"):
                pending_op = child.type
            elif child.type == "pipeline" and pending_op is None:
                stages.extend(self.stages(child))
            elif (
                child.type in ("command", "redirected_statement", "pipeline", "list", "negated_command")
                and pending_op is not None
            ):
                rest = (pending_op, self.and_or(child))
                pending_op = None
            elif child.is_named and child.type not in ("heredoc_start", "heredoc_body", "heredoc_end", "file_redirect"):
                raise Unanswerable(f"{child.type} after a here-document is not run from state")
        first = AndOr((tuple(stages),))
        return first.then(*rest) if rest is not None else first

    def stages(self, node: Any) -> list[Simple]:
        if any(c.type == "|&" for c in node.children):
            raise Unanswerable("|& is not run from state")
        stages: list[Simple] = []
        for child in node.named_children:
            body = child.child_by_field_name("body") if child.type == "redirected_statement" else None
            if child.type == "pipeline" or (body is not None and body.type == "pipeline"):
                # `a 2>&1 | b 2>&1 | c`: the grammar nests the first stages in a pipeline of their own.
                inner = self.and_or(child)
                if len(inner.pipelines) != 1 or inner.negated:
                    raise Unanswerable("a pipeline the executor does not run")
                stages.extend(inner.pipelines[0])
            else:
                stages.append(self.simple(child))
        return stages

    def simple(self, node: Any) -> Simple:
        line = node.start_point[0]
        kind = node.type
        if kind == "redirected_statement":
            body = node.child_by_field_name("body")
            if body is None:  # `> f` alone: the redirection is all there is
                extra: list[Word] = []
                redirects = self.redirects(node, extra)
                return Simple(tuple(extra), (), redirects, line)
            if body.type not in ("command", "declaration_command", "unset_command", "test_command"):
                raise Unanswerable(f"redirections of a {body.type} statement are not run from state")
            inner, extra = self.simple(body), list[Word]()
            redirects = self.redirects(node, extra)
            return Simple(inner.words + tuple(extra), inner.assignments, inner.redirects + redirects, line)
        if kind == "command":
            return self.command(node)
        if kind in ("variable_assignment", "variable_assignments"):
            pairs = [node] if kind == "variable_assignment" else node.named_children
            return Simple((), tuple(self.assignment(a) for a in pairs), (), line)
        if kind in ("declaration_command", "unset_command"):
            return Simple(self.declaration(node), (), (), line)
        if kind == "test_command":
            if node.children[0].type != "[":
                raise Unanswerable("[[ ]] is not run from state")
            return Simple(((Part("["),), *self.test_words(node.children[1:-1]), (Part("]"),)), (), (), line)
        raise Unanswerable(f"a {kind} is not run from state")

    def command(self, node: Any) -> Simple:
        words: list[Word] = []
        assignments, redirects = [], []
        for child in node.children:
            if not child.is_named:
                if child.type in ("==", "=~", "!="):  # `test a == b`: the grammar keeps the operator apart
                    words.append((Part(child.type),))
                continue
            if child.type == "variable_assignment":
                assignments.append(self.assignment(child))
            elif child.type == "command_name":
                words.extend(self.word(c) for c in child.named_children)
            elif child.type in ("file_redirect", "herestring_redirect"):
                extra: list[Word] = []
                redirects.append(self.redirect(child, extra))
                words.extend(extra)
            else:
                words.append(self.word(child))
        return Simple(tuple(words), tuple(assignments), tuple(redirects), node.start_point[0])

    def assignment(self, node: Any) -> tuple[str, Word]:
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is None or name.type != "variable_name" or any(c.type == "+=" for c in node.children):
            raise Unanswerable("only plain NAME=value assignments are run from state")
        return self.text(name), _quoted(self.word(value)) if value is not None else ()

    def declaration(self, node: Any) -> tuple[Word, ...]:
        keyword = node.children[0].type
        if keyword not in ("export", "unset"):
            raise Unanswerable(f"{keyword} is not run from state")
        words: list[Word] = [(Part(keyword),)]
        for child in node.named_children:
            if child.type == "variable_assignment":
                name, value = self.assignment(child)
                words.append((Part(f"{name}=", quoted=True), *value))  # an assignment word: never split or globbed
            elif child.type == "variable_name":
                words.append((Part(self.text(child)),))
            else:
                words.append(self.word(child))
        return tuple(words)

    def test_words(self, children: list[Any]) -> list[Word]:
        """`[ … ]` is a plain builtin to bash; the grammar parses its expression: flattened back."""
        words: list[Word] = []
        for child in children:
            if child.type in _WORDISH:
                words.append(self.word(child))
            elif child.type in ("extglob_pattern", "regex"):
                words.append(_unquoted(self.text(child)))  # `[ a != b ]`: the grammar reads b as a pattern
            elif child.type in ("unary_expression", "binary_expression", "parenthesized_expression"):
                words.extend(self.test_words(child.children))
            elif child.is_named:
                raise Unanswerable(f"a {child.type} in [ ] is not run from state")
            else:
                words.append((Part(child.type),))
        return words

    def redirects(self, node: Any, extra: list[Word]) -> tuple[Redirect, ...]:
        """A redirected statement's redirections, in order (those the grammar nests under a
        here-document included: `cat <<EOF > f`)."""
        found = []
        for child in node.children_by_field_name("redirect"):
            found.append(self.redirect(child, extra))
            if child.type == "heredoc_redirect":
                found.extend(self.redirect(c, extra) for c in child.named_children if c.type == "file_redirect")
        return tuple(found)

    def redirect(self, node: Any, extra: list[Word]) -> Redirect:
        if node.type == "herestring_redirect":
            word = next(iter(node.named_children), None)
            return Redirect(0, "<<", body=(*self.word(word), Part("\n", quoted=True)) if word is not None else ())
        if node.type == "heredoc_redirect":
            return self.heredoc(node)
        fd_node = next((c for c in node.children if c.type == "file_descriptor"), None)
        op = "".join(c.type for c in node.children if not c.is_named)
        targets = [c for c in node.named_children if c.type != "file_descriptor"]
        if not targets:
            raise Unanswerable("a redirection without a target")
        destination, extra_words = targets[0], targets[1:]
        extra.extend(self.word(w) for w in extra_words)  # `echo a >f b`: b is echo's
        fd = int(self.text(fd_node)) if fd_node is not None else (0 if op.startswith("<") else 1)
        if op in (">&", "<&") and destination.type == "number":
            return Redirect(fd, "dup", to_fd=int(self.text(destination)))
        if op in (">", ">>", "<", "&>", "&>>", ">|"):
            return Redirect(fd, ">" if op == ">|" else op, target=self.word(destination))
        raise Unanswerable(f"the redirection {op} is not run from state")

    def heredoc(self, node: Any) -> Redirect:
        ops = [c.type for c in node.children if not c.is_named]
        if "<<-" in ops:
            raise Unanswerable("<<- is not run from state")
        start = next(c for c in node.children if c.type == "heredoc_start")
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if body is None:
            return Redirect(0, "<<")
        if any(q in self.text(start) for q in "'\"\\"):
            return Redirect(0, "<<", body=(Part(self.text(body), quoted=True),))
        return Redirect(0, "<<", body=self.expanding(body, _HEREDOC_ESCAPE))

    # --- words -----------------------------------------------------------------------------

    def word(self, node: Any) -> Word:
        kind = node.type
        if kind in ("word", "number", "test_operator"):
            return _unquoted(self.text(node))
        if kind == "raw_string":
            return (Part(self.text(node)[1:-1], quoted=True),)
        if kind == "ansi_c_string":
            body = self.text(node)[2:-1]
            try:
                return (Part(codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape"), quoted=True),)
            except (UnicodeDecodeError, ValueError) as exc:
                raise Unanswerable("an unusual $'…' string") from exc
        if kind == "string":
            return self.expanding(node, _DQ_ESCAPE, skip=1)
        if kind == "concatenation":
            parts = tuple(p for child in node.named_children for p in self.word(child))
            if _BRACES.search("".join(p.text for p in parts if not p.quoted and not p.var)):
                raise Unanswerable("brace expansion is not run from state")
            return parts
        if kind in ("simple_expansion", "expansion"):
            return (self.variable(node, quoted=False),)
        raise Unanswerable(f"a {kind} is not run from state")

    def expanding(self, node: Any, escape: re.Pattern[str], *, skip: int = 0) -> Word:
        """Double-quoted text or a here-document's: literal stretches (escapes undone) around
        the variables in it, by byte offsets (the grammar does not cover every stretch)."""
        parts: list[Part] = []
        position, end = node.start_byte + skip, node.end_byte - skip
        for child in node.named_children:
            if child.type not in _EXPANSIONS:
                continue
            # The grammar may start an expansion at the blank before its `$`.
            start = child.start_byte + len(self.text(child)) - len(self.text(child).lstrip())
            if start > position:
                parts.append(Part(_unescape(escape, self.text(node, position, start)), quoted=True))
            parts.append(self.variable(child, quoted=True))
            position = child.end_byte
        if end > position:
            parts.append(Part(_unescape(escape, self.text(node, position, end)), quoted=True))
        return tuple(parts)

    def variable(self, node: Any, *, quoted: bool) -> Part:
        text = self.text(node).lstrip()
        name = text[2:-1] if text.startswith("${") and text.endswith("}") else text[1:]
        if node.type not in ("simple_expansion", "expansion") or not (name == "?" or _NAME.fullmatch(name)):
            raise Unanswerable(f"the expansion {text} is not run from state")
        return Part(name, quoted=quoted, var=True)


def _unquoted(text: str) -> Word:
    """An unquoted word's text: a backslash quotes the next character, and a
    backslash-newline joins lines."""
    parts: list[Part] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            if literal:
                parts.append(Part("".join(literal)))
                literal = []
            if text[i + 1] != "\n":
                parts.append(Part(text[i + 1], quoted=True))
            i += 2
        else:
            literal.append(text[i])
            i += 1
    if literal:
        parts.append(Part("".join(literal)))
    if _BRACES.search("".join(p.text for p in parts if not p.quoted)):
        raise Unanswerable("brace expansion is not run from state")
    return tuple(parts)


def _unescape(escape: re.Pattern[str], text: str) -> str:
    """Backslash escapes undone; a backslash-newline joins lines."""
    return escape.sub(lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _quoted(word: Word) -> Word:
    return tuple(Part(p.text, quoted=True, var=p.var) for p in word)
