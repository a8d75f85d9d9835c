"""The shell workload of issue 37: episodes of ordinary shell steps, and their ground truth.

`draw_episodes()` draws, with a fixed seed, 10 episodes of 20 command lines each from the
command set the shell world state answers (redirections and heredocs, echo/printf, cat,
ls with -l/-a, mkdir -p, touch, rm -r/-f, mv, cp, pwd, cd, export, test/[, wc, head,
tail, grep, find -name, true/false, and &&/||/;/pipes among these), about one step in
eight an error (a missing file, rm of a directory without -r, …). Each episode starts
from a few files in /workspace, given the way an episode's `files` option gives them.

`run_in_sandbox(episode)` runs an episode in the project's sandbox image through the
shell channel's real side (`DockerShell`: the hardened container, its tmpfs workspace,
the persistent bash that merges stderr into stdout in order) after writing the initial
files as the episode host writes them (router/episodes/host.py), and returns what the
agent saw per step: (output, exit code). That is the ground truth a simulated episode is
compared with; `same_answer` compares two answers with `ls -l` dates masked.

The draw only tracks names (which files and folders exist), never contents: whatever a
command prints is the sandbox's business, so the workload does not encode the expected
answers and cannot be tuned to an implementation.
"""

from __future__ import annotations

import base64
import random
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

SEED = 37
EPISODES = 10
STEPS = 20

_WORDS = (
    "alpha",
    "beta",
    "gamma",
    "delta",
    "error",
    "warning",
    "ok",
    "todo",
    "milk",
    "eggs",
    "deploy",
    "Alice",
    "bob",
    "noon",
)
_LINES = (
    "alpha beta gamma",
    "error: disk full",
    "warning: low memory",
    "todo: buy milk and eggs",
    "ok 200 GET /index.html",
    "deploy v2 tonight",
    "call Alice back at noon",
    "bob owes 12 coins",
    "Error: retry later",
    "delta 42",
)
_NEW_NAMES = (
    "notes.txt",
    "log.txt",
    "todo.md",
    "data.csv",
    "out.txt",
    "report.txt",
    "list.txt",
    "a.txt",
    "b.log",
    "draft.md",
)
_NEW_DIRS = ("docs", "build", "tmp", "src/util", "archive", "logs/old")
# An `ls -l` line's date: "Nov 28 02:49" (this year) or "Nov 28  2025" (older).
_LS_DATE = re.compile(
    r"(?m)^([-dlcbps][-rwxsStT]{9}[.+]?\s+\d+\s+\S+\s+\S+\s+\d+) [A-Z][a-z]{2} [ \d]\d (?:\d\d:\d\d| \d{4}) "
)


@dataclass(frozen=True)
class Episode:
    index: int
    files: dict[str, str]  # initial files: path under /workspace -> text
    commands: tuple[str, ...]


@dataclass
class _Names:
    """What the draw knows: the files and folders that exist (paths under /workspace), and
    the working directory ("" for /workspace itself)."""

    files: set[str]
    dirs: set[str]
    cwd: str = ""
    exported: list[str] = field(default_factory=list)

    def here(self, paths: set[str]) -> list[str]:
        """`paths` below the working directory, relative to it, sorted."""
        prefix = f"{self.cwd}/" if self.cwd else ""
        return sorted(p[len(prefix) :] for p in paths if p.startswith(prefix))

    def absolute(self, relative: str) -> str:
        return f"{self.cwd}/{relative}" if self.cwd else relative

    def fresh(self, rng: random.Random) -> str:
        taken = self.files | self.dirs
        choices = [n for n in _NEW_NAMES if self.absolute(n) not in taken]
        return rng.choice(choices) if choices else f"f{rng.randrange(1000)}.txt"


def _q(word: str) -> str:
    return shlex.quote(word)


def _line(rng: random.Random) -> str:
    return rng.choice(_LINES)


# --- operations: each returns a command line and updates the names it changes -------------


def _write(rng: random.Random, n: _Names) -> str:
    name = n.fresh(rng) if rng.random() < 0.7 or not n.here(n.files) else rng.choice(n.here(n.files))
    n.files.add(n.absolute(name))
    return f"echo {_q(_line(rng))} > {name}"


def _append(rng: random.Random, n: _Names) -> str:
    files = n.here(n.files)
    name = rng.choice(files) if files else n.fresh(rng)
    n.files.add(n.absolute(name))
    return f"echo {_q(_line(rng))} >> {name}"


def _printf(rng: random.Random, n: _Names) -> str:
    name = n.fresh(rng)
    n.files.add(n.absolute(name))
    if rng.random() < 0.5:
        words = " ".join(rng.sample(_WORDS, 3))
        return f"printf '%s\\n' {words} > {name}"
    return f"printf '%s=%d\\n' {rng.choice(_WORDS)} {rng.randrange(100)} > {name} && cat {name}"


def _heredoc(rng: random.Random, n: _Names) -> str:
    name = n.fresh(rng)
    n.files.add(n.absolute(name))
    body = "\n".join(rng.sample(_LINES, rng.randint(2, 4)))
    if rng.random() < 0.5:
        return f"cat > {name} <<'EOF'\n{body}\nEOF"
    return f"cat <<EOF > {name}\n{body}\nhome is $HOME\nEOF\nwc -l {name}"


def _cat(rng: random.Random, n: _Names) -> str:
    files = n.here(n.files)
    if not files or rng.random() < 0.12:
        return f"cat {rng.choice(('missing.txt', 'nope.log', 'old/notes.txt'))}"
    if len(files) > 1 and rng.random() < 0.2:
        return "cat " + " ".join(rng.sample(files, 2))
    return f"cat {rng.choice(files)}"


def _ls(rng: random.Random, n: _Names) -> str:
    dirs = n.here(n.dirs)
    roll = rng.random()
    if roll < 0.3:
        return "ls"
    if roll < 0.5:
        return "ls -l"
    if roll < 0.65:
        return "ls -la"
    if roll < 0.85 and dirs:
        return f"ls {rng.choice(('', '-l ', '-a '))}{rng.choice(dirs)}"
    if roll < 0.92:
        return "ls missing"
    return "ls -1 | wc -l"


def _mkdir(rng: random.Random, n: _Names) -> str:
    dirs = n.here(n.dirs)
    if dirs and rng.random() < 0.15:
        return f"mkdir {rng.choice(dirs)}"  # exists: an error
    name = rng.choice([d for d in _NEW_DIRS if n.absolute(d) not in n.dirs] or ["more"])
    parts = n.absolute(name).split("/")
    for i in range(1, len(parts) + 1):
        n.dirs.add("/".join(parts[:i]))
    return f"mkdir -p {name}" + (" && ls" if rng.random() < 0.3 else "")


def _touch(rng: random.Random, n: _Names) -> str:
    name = n.fresh(rng) if rng.random() < 0.7 or not n.here(n.files) else rng.choice(n.here(n.files))
    n.files.add(n.absolute(name))
    return f"touch {name}"


def _move(rng: random.Random, n: _Names) -> str:
    files, dirs = n.here(n.files), n.here(n.dirs)
    if not files or rng.random() < 0.1:
        return "mv ghost.txt ghost2.txt"
    source = rng.choice(files)
    n.files.discard(n.absolute(source))
    if dirs and rng.random() < 0.4:
        target = rng.choice(dirs)
        n.files.add(n.absolute(f"{target}/{source.rsplit('/', 1)[-1]}"))
        return f"mv {source} {target}/"
    target = n.fresh(rng)
    n.files.add(n.absolute(target))
    return f"mv {source} {target}"


def _copy(rng: random.Random, n: _Names) -> str:
    files, dirs = n.here(n.files), n.here(n.dirs)
    if dirs and rng.random() < 0.12:
        return f"cp {rng.choice(dirs)} copy"  # a directory without -r: an error
    if not files:
        return "cp nothing.txt x.txt"
    source, target = rng.choice(files), n.fresh(rng)
    n.files.add(n.absolute(target))
    return f"cp {source} {target}" + (f" && cat {target}" if rng.random() < 0.3 else "")


def _remove(rng: random.Random, n: _Names) -> str:
    files, dirs = n.here(n.files), n.here(n.dirs)
    roll = rng.random()
    if dirs and roll < 0.15:
        return f"rm {rng.choice(dirs)}"  # a directory without -r: an error
    if dirs and roll < 0.3:
        victim = rng.choice(dirs)
        gone = n.absolute(victim)
        n.dirs -= {d for d in n.dirs if d == gone or d.startswith(gone + "/")}
        n.files -= {f for f in n.files if f.startswith(gone + "/")}
        return f"rm -r {victim}"
    if roll < 0.4 or not files:
        return "rm -f nothing.txt; echo $?"
    victim = rng.choice(files)
    n.files.discard(n.absolute(victim))
    return f"rm {victim}" + (" && ls" if rng.random() < 0.3 else "")


def _grep(rng: random.Random, n: _Names) -> str:
    files = n.here(n.files)
    if not files or rng.random() < 0.08:
        return "grep alpha missing.txt"
    name, word = rng.choice(files), rng.choice(_WORDS)
    form = rng.choice(
        (
            "{w} {f}",
            "-c {w} {f}",
            "-n {w} {f}",
            "-i {w} {f}",
            "-v {w} {f}",
            "'^{w}' {f}",
            "'[0-9][0-9]*' {f}",
            "-in 'e.r' {f}",
        )
    )
    return "grep " + form.format(w=word, f=name)


def _count(rng: random.Random, n: _Names) -> str:
    files = n.here(n.files)
    if not files:
        return "wc -l missing.txt"
    name = rng.choice(files)
    return rng.choice((f"wc -l {name}", f"wc {name}", f"wc -w {name}", f"wc -c {name}", f"cat {name} | wc -l"))


def _head_tail(rng: random.Random, n: _Names) -> str:
    files = n.here(n.files)
    if not files:
        return "head -n 1 missing.txt"
    name = rng.choice(files)
    return rng.choice((f"head -n 2 {name}", f"tail -n 1 {name}", f"head -n 1 {name}", f"tail -n 3 {name}"))


def _find(rng: random.Random, n: _Names) -> str:
    return rng.choice(("find . -name '*.txt'", "find . -name '*.md'", "find . -name notes.txt", "find missing -name x"))


def _navigate(rng: random.Random, n: _Names) -> str:
    if n.cwd:
        n.cwd = ""
        return "cd .. && pwd"
    dirs = [d for d in n.dirs if "/" not in d]
    if not dirs or rng.random() < 0.3:
        return rng.choice(("pwd", "cd nowhere"))
    n.cwd = rng.choice(sorted(dirs))
    return f"cd {n.cwd}"


def _test(rng: random.Random, n: _Names) -> str:
    files, dirs = n.here(n.files), n.here(n.dirs)
    name = rng.choice(files) if files and rng.random() < 0.7 else "absent.txt"
    if dirs and rng.random() < 0.3:
        return f"[ -d {rng.choice(dirs)} ] && echo dir || echo no"
    return rng.choice(
        (
            f"test -f {name} && echo yes || echo no",
            f"[ -e {name} ]; echo $?",
            f'[ -n "$HOME" ] && [ -s {name} ] && echo full',
        )
    )


def _export(rng: random.Random, n: _Names) -> str:
    if n.exported and rng.random() < 0.5:
        return f'echo "value: ${{{rng.choice(n.exported)}}}"'
    name = rng.choice(("GREETING", "MODE", "TARGET"))
    n.exported.append(name)
    return f"export {name}={rng.choice(_WORDS)} && echo ${name}"


def _logic(rng: random.Random, n: _Names) -> str:
    return rng.choice(
        ("true && echo ok", "false || echo failed", "false; echo $?", "true; false && echo never; echo done")
    )


def _pipeline(rng: random.Random, n: _Names) -> str:
    files = n.here(n.files)
    if not files:
        return "ls | wc -l"
    name, word = rng.choice(files), rng.choice(_WORDS)
    return rng.choice(
        (
            f"cat {name} | grep {word} | wc -l",
            f"cat {name} | head -n 1",
            "ls | wc -l",
            f"grep -i {word} {name} > hits.txt; cat hits.txt",
        )
    )


# Weights: writes and reads dominate, as in an agent's session.
_OPERATIONS: tuple[tuple[Callable[[random.Random, _Names], str], int], ...] = (
    (_write, 10),
    (_append, 6),
    (_printf, 4),
    (_heredoc, 3),
    (_cat, 12),
    (_ls, 9),
    (_mkdir, 4),
    (_touch, 3),
    (_move, 4),
    (_copy, 4),
    (_remove, 5),
    (_grep, 8),
    (_count, 5),
    (_head_tail, 4),
    (_find, 2),
    (_navigate, 3),
    (_test, 3),
    (_export, 2),
    (_logic, 2),
    (_pipeline, 4),
)


def _initial_files(rng: random.Random) -> dict[str, str]:
    names = rng.sample(
        ("notes.txt", "README.md", "todo.md", "src/main.py", "data/items.csv", "log.txt"), rng.randint(2, 4)
    )
    files = {}
    for name in names:
        if name.endswith(".py"):
            files[name] = "import sys\n\nprint('hello', sys.argv)\n"
        elif name.endswith(".csv"):
            files[name] = "id,name\n" + "".join(f"{i},{rng.choice(_WORDS)}\n" for i in range(1, rng.randint(3, 6)))
        else:
            files[name] = "".join(line + "\n" for line in rng.sample(_LINES, rng.randint(1, 5)))
    return files


def draw_episodes(*, seed: int = SEED, episodes: int = EPISODES, steps: int = STEPS) -> list[Episode]:
    """The workload: `episodes` episodes of `steps` command lines, the same for the same seed."""
    rng = random.Random(seed)
    operations = [op for op, _ in _OPERATIONS]
    weights = [w for _, w in _OPERATIONS]
    drawn = []
    for index in range(episodes):
        files = _initial_files(rng)
        names = _Names(set(files), {p.rsplit("/", 1)[0] for p in files if "/" in p})
        commands = tuple(rng.choices(operations, weights)[0](rng, names) for _ in range(steps))
        drawn.append(Episode(index, files, commands))
    return drawn


# --- ground truth ---------------------------------------------------------------------------


def seed_script(files: dict[str, str]) -> str:
    """The command that writes an episode's initial files into a real sandbox, as the
    episode host writes them (router/episodes/host.py): modes and folders as bash makes them."""
    script = " && ".join(
        f"mkdir -p {shlex.quote(path.rsplit('/', 1)[0] if '/' in path else '.')} && printf %s "
        f"{shlex.quote(base64.b64encode(text.encode()).decode())} | base64 -d > {shlex.quote(path)}"
        for path, text in files.items()
    )
    return f"(cd /workspace && {script})"


async def run_in_sandbox(episode: Episode, *, timeout_s: float = 30.0) -> list[tuple[str, int | None]]:
    """What the agent sees for each of the episode's steps in a fresh real sandbox:
    (output with stderr merged in order, exit code). Needs Docker and the sandbox image."""
    import docker

    from backends.shell.docker_shell import DockerShell
    from backends.shell.options import ShellConfig
    from backends.shell.owned import OwnedContainers
    from records.owners import this_process_owner

    shell = await DockerShell(OwnedContainers(docker.from_env()), ShellConfig(), owner=this_process_owner()).start()
    try:
        if episode.files:
            seeded = await shell.exec(seed_script(episode.files), timeout_s=timeout_s)
            if seeded.exit_code != 0:
                raise RuntimeError(f"episode {episode.index}: writing its initial files failed: {seeded.output[-200:]}")
        answers = []
        for command in episode.commands:
            result = await shell.exec(command, timeout_s=timeout_s)
            answers.append((result.output, result.exit_code))
        return answers
    finally:
        await shell.aclose()


def mask_dates(text: str) -> str:
    """`ls -l` dates replaced by a mark (the sandbox's clock is not the simulation's)."""
    return _LS_DATE.sub(r"\1 <date> ", text)


def same_answer(a: tuple[str, int | None], b: tuple[str, int | None]) -> bool:
    """Whether two answers show the agent the same: output (dates masked) and exit code."""
    return mask_dates(a[0]) == mask_dates(b[0]) and a[1] == b[1]
