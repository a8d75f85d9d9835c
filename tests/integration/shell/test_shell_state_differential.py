"""Differential check of the shell world state against the sandbox: seeded random command
lines from the supported set (odd options, missing and wrong-kind operands, patterns,
lists, pipes and redirections mixed) run in one real sandbox and through the executor.
Every line the state answers must be answered exactly as the sandbox did; a line it
declines is observed with the sandbox's answer (as the real route would), and the run
goes on. This found most of what the fixed list in test_shell_state_fidelity.py covers."""

from __future__ import annotations

import base64
import random
import re
import shlex

import pytest

from backends.shell.screen import ShellResult
from backends.world_state.shell import new_world, observe, run, seed_files
from calls import Provenance

pytestmark = pytest.mark.integration

FILES = {"a.txt": "alpha\nbeta\ngamma\n", "b.md": "Beta one\n", "d/x.txt": "x1\nx2\n", "e/f/g.log": "", "nonl": "last"}
NAMES = [
    "a.txt",
    "b.md",
    "d",
    "d/x.txt",
    "e",
    "e/f",
    "e/f/g.log",
    "nonl",
    "new.txt",
    "nd",
    "nope",
    "d/",
    "*.txt",
    "d/*",
    "..",
    ".",
]
_LS_DATE = re.compile(r"(?m)^([-d][-rwxsStT]{9}\s+\d+\s+\S+\s+\S+\s+\d+) [A-Z][a-z]{2} [ \d]\d (?:\d\d:\d\d| \d{4}) ")


def command(rng: random.Random) -> str:
    def some(low: int, high: int) -> str:
        return " ".join(rng.choice(NAMES) for _ in range(rng.randint(low, high)))

    program = rng.choice("echo printf cat ls mkdir touch rm rmdir mv cp cd test [ wc head tail grep find".split())
    options = {
        "echo": ["hi", "-n x", "-e 'a\\tb'", "'a  b'", "$HOME", '"$X"'],
        "printf": ["'%s\\n' a", "'%d:%s\\n' 7 b c", "'x%5sy\\n' ab", "%c", "'%03d\\n' 7 b"],
        "ls": ["", "-l ", "-a ", "-la ", "-1 ", "-A ", "-d "],
        "mkdir": ["", "-p "],
        "rm": ["", "-r ", "-f ", "-rf "],
        "cp": ["", "-r "],
        "wc": ["", "-l ", "-w ", "-c "],
        "head": ["", "-n 1 ", "-n -1 ", "-2 "],
        "tail": ["", "-n 1 ", "-n +2 "],
        "grep": ["", "-n ", "-c ", "-i ", "-v ", "-l ", "-x ", "-E "],
    }
    if program in ("echo", "printf"):
        return f"{program} {rng.choice(options[program])}"
    if program in ("cat", "touch", "rmdir"):
        return f"{program} {some(0 if program == 'cat' else 1, 2)}"
    if program in ("ls", "mkdir", "rm", "wc", "head", "tail"):
        return f"{program} {rng.choice(options[program])}{some(0 if program == 'ls' else 1, 2)}"
    if program in ("mv", "cp"):
        return f"{program} {rng.choice(options.get(program, ['']))}{some(2, 2)}"
    if program == "cd":
        return f"cd {rng.choice(['', '-', 'd', 'e/f', '..', 'nope', 'a.txt', '/tmp', '~'])}"
    if program in ("test", "["):
        test = rng.choice(
            [
                f"-e {rng.choice(NAMES)}",
                f"-f {rng.choice(NAMES)}",
                f"-d {rng.choice(NAMES)}",
                "-z ''",
                "a = b",
                "1 -lt 2",
            ]
        )
        return f"test {test}" if program == "test" else f"[ {test} ]"
    if program == "grep":
        pattern = rng.choice(["a", "'^B'", "'a$'", "'e.a'", "'[0-9]'", "'be|ga'"])
        return f"grep {rng.choice(options['grep'])}{pattern} {some(1, 2)}"
    return f"find {rng.choice(['.', 'd', 'e', 'nope', ''])}{rng.choice(['', ' -name *.txt', ' -type f', ' -type d'])}"


def line(rng: random.Random) -> str:
    parts = [command(rng)]
    for _ in range(rng.randint(0, 2)):
        parts += [rng.choice([" && ", " || ", "; ", " | ", " > out; cat out; ", " 2>&1 | "]), command(rng)]
    return "".join(parts)


def masked(text: str) -> str:
    return _LS_DATE.sub(r"\1 <date> ", text)


@pytest.mark.parametrize("seed", [1, 2])
async def test_every_answer_the_state_gives_is_the_sandboxs(seed: int) -> None:
    import docker

    from backends.shell.docker_shell import DockerShell
    from backends.shell.options import ShellConfig
    from backends.shell.owned import OwnedContainers
    from records.owners import this_process_owner

    rng = random.Random(seed)
    lines = [line(rng) for _ in range(60)]
    world = new_world(clock=1_800_000_000.0)
    seed_files(world, FILES)
    shell = await DockerShell(OwnedContainers(docker.from_env()), ShellConfig(), owner=this_process_owner()).start()
    answered, differing = 0, []
    try:
        script = " && ".join(
            f"mkdir -p {shlex.quote(p.rsplit('/', 1)[0] if '/' in p else '.')} && printf %s "
            f"{shlex.quote(base64.b64encode(t.encode()).decode())} | base64 -d > {shlex.quote(p)}"
            for p, t in FILES.items()
        )
        assert (await shell.exec(f"(cd /workspace && {script})", timeout_s=30)).exit_code == 0
        for text in lines:
            real = await shell.exec(text, timeout_s=30)
            outcome = run(world, text)
            if outcome is None:
                observe(world, text, ShellResult(real.output, real.exit_code, real.cwd), provenance=Provenance.REAL)
                continue
            answered += 1
            if (masked(outcome.output), outcome.exit_code) != (masked(real.output), real.exit_code):
                differing.append((text, real.output, real.exit_code, outcome.output, outcome.exit_code))
                break  # the two sides have parted: what follows compares nothing
    finally:
        await shell.aclose()
    assert not differing, differing
    assert answered >= 10  # the check checks something
