"""A command line's structure, and what the executor declines before anything runs."""

from __future__ import annotations

import pytest

from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.parse import parse_line
from backends.world_state.shell.syntax import Part, Redirect


def words(line: str) -> list[list[tuple[str, bool, bool]]]:
    (statement,) = parse_line(line)
    (pipeline,) = statement.pipelines
    (command,) = pipeline
    return [[(p.text, p.quoted, p.var) for p in word] for word in command.words]


def test_lists_and_pipelines():
    script = parse_line("a && b | c || d; e")
    assert len(script) == 2
    first = script[0]
    assert first.operators == ("&&", "||")
    assert [len(p) for p in first.pipelines] == [1, 2, 1]
    assert [[w[0].text for w in c.words[:1]] for p in first.pipelines for c in p] == [["a"], ["b"], ["c"], ["d"]]


def test_negation_is_kept_per_pipeline():
    (statement,) = parse_line("true && ! false")
    assert statement.negated == frozenset({1})


def test_quoting_escapes_and_variables():
    assert words("echo \"x $HOME ${Y}y\" 'l $a' a\\ b \\$z") == [
        [("echo", False, False)],
        [("x ", True, False), ("HOME", True, True), (" ", True, False), ("Y", True, True), ("y", True, False)],
        [("l $a", True, False)],
        [("a", False, False), (" ", True, False), ("b", False, False)],
        [("$", True, False), ("z", False, False)],
    ]


def test_special_and_ansi_c_words():
    assert words('echo $? $\'a\\tb\' "q\\""') == [
        [("echo", False, False)],
        [("?", False, True)],
        [("a\tb", True, False)],
        [('q"', True, False)],
    ]


def test_redirections_in_order():
    (statement,) = parse_line("cmd > out 2>&1 >> log < in 2> err &> both")
    (command,) = statement.pipelines[0]
    assert [(r.fd, r.op, "".join(p.text for p in r.target), r.to_fd) for r in command.redirects] == [
        (1, ">", "out", -1),
        (2, "dup", "", 1),
        (1, ">>", "log", -1),
        (0, "<", "in", -1),
        (2, ">", "err", -1),
        (1, "&>", "both", -1),
    ]


def test_words_after_a_redirection_are_the_commands():
    assert [w[0][0] for w in words("echo a > f b")] == ["echo", "a", "b"]


def test_a_pipelines_redirections_belong_to_its_last_command():
    (statement,) = parse_line("cat f | head -n 1 > out")
    first, last = statement.pipelines[0]
    assert not first.redirects and last.redirects[0].op == ">"


def test_here_documents_expand_unless_their_delimiter_is_quoted():
    (statement,) = parse_line("cat <<EOF > f\nhi $X \\$Y\nEOF")
    (command,) = statement.pipelines[0]
    heredoc, to_file = command.redirects
    assert heredoc.body == (Part("hi ", quoted=True), Part("X", quoted=True, var=True), Part(" $Y\n", quoted=True))
    assert to_file.op == ">"
    (statement,) = parse_line("cat <<'EOF'\nhi $X\nEOF")
    assert statement.pipelines[0][0].redirects == (Redirect(0, "<<", body=(Part("hi $X\n", quoted=True),)),)


def test_the_rest_of_a_line_after_a_here_document():
    (statement,) = parse_line("cat <<EOF > f && wc -l f\na\nEOF")
    assert statement.operators == ("&&",)
    (statement,) = parse_line("cat <<EOF | wc -l\na\nEOF")
    assert len(statement.pipelines[0]) == 2


def test_brackets_are_the_builtin_with_its_words():
    assert [w[0][0] for w in words('[ -n "$A" ]')] == ["[", "-n", "A", "]"]
    assert [w[0][0] for w in words("[ a != b ]")] == ["[", "a", "!=", "b", "]"]


def test_export_and_assignments():
    assert ["".join(text for text, _, _ in w) for w in words("export A=b C")] == ["export", "A=b", "C"]
    (statement,) = parse_line("X=1 Y='a b'")
    assert [name for name, _ in statement.pipelines[0][0].assignments] == ["X", "Y"]


@pytest.mark.parametrize(
    "line",
    [
        "echo $(ls)",
        "echo `pwd`",
        "echo $((1+2))",
        "echo {a,b}",
        "echo ${X:-d}",
        "(cd x)",
        "for f in *; do echo $f; done",
        "if true; then echo; fi",
        "f() { :; }",
        "sleep 1 &",
        "[[ -f x ]]",
        "cat <<-EOF\n\tx\n\tEOF",
        "echo 'unterminated",
        "echo $1",
    ],
)
def test_what_the_executor_does_not_run_is_refused_before_it_runs(line):
    with pytest.raises(Unanswerable):
        parse_line(line)
