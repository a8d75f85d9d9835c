"""`run(state, command_line)`: the answer a command line gets from the shell state alone.

The line is parsed first (parse.py), then run on a copy of the state: statements, and-or
lists, pipelines (every stage but the last in a subshell of its own: cd and export there
do not last), redirections set up in order before the command, output routed through
the command's descriptors. The terminal shows stdout and stderr merged in the order they
were written, as the channel's shell does (`exec 2>&1`, backends/shell/bash_stream.py),
trimmed as the channel trims a screen.

Anything unknown on the way (Unanswerable) leaves the state as it was and answers None:
the world model is asked. Otherwise the copy becomes the state, within its caps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from backends.shell.screen import ShellResult, trim_screen
from backends.world_state.shell import caps
from backends.world_state.shell.commands import COMMANDS, Context
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.filesystem import DIR, FILE, parent_of
from backends.world_state.shell.parse import parse_line
from backends.world_state.shell.state import ShellWorld
from backends.world_state.shell.syntax import AndOr, Redirect, Simple
from backends.world_state.shell.words import expand, expand_one, redirect_target

SCREEN_LINES = 200  # the channel's defaults (backends/shell/options.py)
SCREEN_CHARS = 16000


@dataclass(frozen=True, slots=True)
class ShellOutcome:
    output: str  # what the agent's terminal shows
    exit_code: int
    cwd: str
    invented: bool = False  # the answer rests on content a simulated answer invented
    truncated: bool = False

    def to_result(self) -> ShellResult:
        """The outcome as the shell channel's result type."""
        return ShellResult(self.output, self.exit_code, self.cwd, truncated=self.truncated)


def run(
    state: ShellWorld, command_line: str, *, screen_lines: int = SCREEN_LINES, screen_chars: int = SCREEN_CHARS
) -> ShellOutcome | None:
    """The outcome of `command_line` from state, the state updated in place; None (the
    state untouched) when the state cannot answer it."""
    try:
        return run_or_raise(state, command_line, screen_lines=screen_lines, screen_chars=screen_chars)
    except Unanswerable:
        return None


def run_or_raise(
    state: ShellWorld, command_line: str, *, screen_lines: int = SCREEN_LINES, screen_chars: int = SCREEN_CHARS
) -> ShellOutcome:
    """As `run`, raising Unanswerable (which says why) instead of answering None."""
    script = parse_line(command_line)
    work = state.copy()
    # The channel's shell runs each line through `eval "$(… | base64 -d)"`: `$?` starts
    # every line as that decoding's status, 0, whatever the last line ended with.
    work.exit_code = 0
    runner = _Runner(work)
    for statement in script:
        runner.statement(statement)
    output = "".join(runner.terminal)
    if len(output.encode("utf-8", "surrogateescape")) > 3 * screen_chars:
        raise Unanswerable("more output than the channel captures whole")
    output, truncated = trim_screen(output, max_lines=screen_lines, max_chars=screen_chars)
    caps.enforce(work.fs)
    state.take(work)
    return ShellOutcome(output, work.exit_code, work.cwd, invented=runner.invented[0], truncated=truncated)


class _Runner:
    def __init__(self, world: ShellWorld) -> None:
        self.world = world
        self.terminal: list[str] = []
        self.invented = [False]

    def statement(self, statement: AndOr) -> None:
        code = self.pipeline(statement.pipelines[0], 0 in statement.negated)
        for i, op in enumerate(statement.operators, start=1):
            if (op == "&&") == (code == 0):
                code = self.pipeline(statement.pipelines[i], i in statement.negated)
        self.world.exit_code = code

    def pipeline(self, stages: tuple[Simple, ...], negated: bool) -> int:
        code = self.stages(stages)
        if negated:
            code = 0 if code else 1
        self.world.exit_code = code
        return code

    def stages(self, stages: tuple[Simple, ...]) -> int:
        if len(stages) == 1:
            log = _StageLog()
            return self.simple(stages[0], self.world, ("", None), _Terminal(self.terminal, log), log)
        feed: tuple[str | None, int | None] = ("", None)
        code = 0
        logs = []
        fs = self.world.fs
        for i, stage in enumerate(stages):
            # A subshell: its own cwd and variables, the one filesystem.
            shell = ShellWorld(fs, self.world.cwd, dict(self.world.env), self.world.exit_code, self.world.clock)
            log = _StageLog()
            logs.append(log)
            pipe = _Pipe(log)
            before, fs.seen = dict(fs.nodes), log.seen
            try:
                code = self.simple(
                    stage, shell, feed, _Terminal(self.terminal, log) if i == len(stages) - 1 else pipe, log
                )
            finally:
                fs.seen = None
            log.changed = {p for p in before.keys() | fs.nodes.keys() if before.get(p) is not fs.nodes.get(p)}
            log.changed |= {
                parent_of(p) for p in before.keys() ^ fs.nodes.keys()
            }  # made or removed: the listing changed
            feed = (pipe.text(), None)
        _check_order(logs)
        return code

    def simple(
        self, command: Simple, world: ShellWorld, stdin: tuple[str | None, int | None], stdout: _Sink, log: _StageLog
    ) -> int:
        def variable(name: str) -> str:
            if name == "?":
                return str(world.exit_code)
            value = world.env.get(name, "")
            if value is None:
                raise Unanswerable(f"the value of ${name} is not known")
            return value

        home = variable("HOME")
        argv = [arg for word in command.words for arg in expand(word, variable, home, world.fs, world.cwd)]
        if argv and command.assignments:
            raise Unanswerable("variables set for one command are not run from state")
        if argv and argv[0] not in COMMANDS:
            raise Unanswerable(f"{argv[0]} is not answered from state")
        fds: dict[int, _Sink] = {1: stdout, 2: _Terminal(self.terminal, log)}
        ctx = Context(world, command.line, lambda fd, text: fds[fd].write(text, ctx), stdin[0], stdin[1], self.invented)
        for redirect in command.redirects:
            if not self.redirect(ctx, redirect, fds, variable, home):
                return 1
        if not argv:
            for name, value in command.assignments:
                world.env[name] = expand_one(value, variable, home)
            return 0
        ctx.writes_to = frozenset(sink.path for sink in fds.values() if isinstance(sink, _File))
        code = COMMANDS[argv[0]](ctx, argv[1:])
        log.used_stdin = ctx.used_stdin
        return code

    def redirect(
        self, ctx: Context, redirect: Redirect, fds: dict[int, _Sink], variable: Callable[[str], str], home: str
    ) -> bool:
        """Sets up one redirection; False (bash's message said) when it fails."""
        if redirect.fd not in (0, 1, 2):
            raise Unanswerable("descriptors beyond 2 are not run from state")
        if redirect.op == "dup":
            if redirect.to_fd not in fds or redirect.fd == 0:
                raise Unanswerable("a duplication of a descriptor the state does not model")
            fds[redirect.fd] = fds[redirect.to_fd]
            return True
        if redirect.op == "<<":
            ctx.stdin_text, ctx.stdin_size = expand_one(redirect.body, variable, home), None
            return True
        target = redirect_target(redirect.target, variable, home)
        if target == "/dev/null":
            if redirect.op == "<":
                ctx.stdin_text, ctx.stdin_size = "", None
            else:
                fds[redirect.fd] = _Null()
                if redirect.op.startswith("&"):
                    fds[1] = fds[2] = _Null()
            return True
        path = ctx.path(target)
        node = ctx.world.fs.lookup(path)
        if node is not None and node.kind is None:
            raise Unanswerable(f"whether {target} is a file is not known")
        if redirect.op == "<":
            if node is None or node.kind == DIR:
                if node is not None:
                    raise Unanswerable("a directory as input")
                ctx.bash_error(f"{target}: {ctx.missing(target)}")
                return False
            text = ctx.read_or_unknown(path)
            ctx.stdin_text, ctx.stdin_size = (
                text,
                None if text is None else len(text.encode("utf-8", "surrogateescape")),
            )
            return True
        if node is not None and node.kind == DIR:
            ctx.bash_error(f"{target}: Is a directory")
            return False
        if node is None:
            parent = ctx.world.fs.lookup(path.rsplit("/", 1)[0] or "/")
            if parent is None or parent.kind != DIR or target.endswith("/"):
                if parent is not None and parent.kind is None:
                    raise Unanswerable(f"whether the folder of {target} is one is not known")
                ctx.bash_error(
                    f"{target}: "
                    f"{'Is a directory' if target.endswith('/') and parent is not None else ctx.missing(target)}"
                )
                return False
        elif node.owner != "agent":
            raise Unanswerable(f"a write to {target}, not the agent's")
        ctx.write(path, "", append=redirect.op in (">>", "&>>"))
        sink = _File(path)
        fds[redirect.fd] = sink
        if redirect.op.startswith("&"):
            fds[1] = fds[2] = sink
        return True


@dataclass(slots=True)
class _StageLog:
    """What a pipeline stage wrote where, in order ("t" terminal, "p" pipe), and whether it
    read its input."""

    events: list[str] = field(default_factory=list)
    used_stdin: bool = False
    seen: set[str] = field(default_factory=set)  # paths it asked about
    changed: set[str] = field(default_factory=set)  # paths it changed, and their folders


def _check_order(logs: list[_StageLog]) -> None:
    """The stages of a pipeline run at once: their writes to the terminal come in an order
    the state can tell only when each writer's messages precede what it sends down the
    pipe (later ones race the next stage, or die with it by SIGPIPE) and every stage after
    the first writer reads its input to the end before it can write; and what one stage
    changes must be what no other stage looks at."""
    for log in logs[:-1]:
        if (
            "t" in log.events
            and "p" in log.events
            and log.events.index("p") < len(log.events) - 1 - log.events[::-1].index("t")
        ):
            raise Unanswerable("a pipeline stage writes to the terminal after it fed the next one")
    writers = [i for i, log in enumerate(logs) if "t" in log.events]
    if len(writers) > 1 and not all(log.used_stdin for log in logs[writers[0] + 1 :]):
        raise Unanswerable("pipeline stages writing to the terminal in an order that races")
    for i, log in enumerate(logs):
        if any(log.changed & (other.seen | other.changed) for other in logs[:i] + logs[i + 1 :]):
            raise Unanswerable("pipeline stages changing what another one looks at, all at once")


class _Sink(Protocol):
    """Where a command's output goes: the terminal, the next stage, a file, nowhere."""

    def write(self, text: str | None, ctx: Context) -> None: ...


class _Terminal(_Sink):
    def __init__(self, chunks: list[str], log: _StageLog) -> None:
        self.chunks, self.log = chunks, log

    def write(self, text: str | None, ctx: Context) -> None:
        if text is None:
            raise Unanswerable("the output shows content the state does not hold")
        if text:
            self.chunks.append(text)
            self.log.events.append("t")


class _Pipe(_Sink):
    def __init__(self, log: _StageLog) -> None:
        self.chunks: list[str | None] = []
        self.log = log

    def write(self, text: str | None, ctx: Context) -> None:
        self.chunks.append(text)
        if text != "":
            self.log.events.append("p")

    def text(self) -> str | None:
        return None if any(c is None for c in self.chunks) else "".join(c for c in self.chunks if c is not None)


class _File(_Sink):
    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, text: str | None, ctx: Context) -> None:
        node = ctx.world.fs.nodes.get(self.path)
        if node is None or node.kind != FILE:
            raise Unanswerable("a redirection target that went away while written")
        ctx.write(self.path, text, append=True)


class _Null(_Sink):
    def write(self, text: str | None, ctx: Context) -> None:
        return None
