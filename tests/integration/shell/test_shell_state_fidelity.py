"""The shell world state answers as the real sandbox does: a fixed sequence of command
lines (the supported set, errors included) runs in the project's sandbox image through
the shell channel's real side (one sandbox, the lines in order, from the same initial
files) and through the executor from a seeded state; each step's output (stdout and
stderr as the agent sees them, `ls -l` dates masked) and exit code must be identical."""

from __future__ import annotations

import base64
import re
import shlex

import pytest

from backends.world_state.shell import new_world, run, seed_files

pytestmark = pytest.mark.integration

FILES = {
    "notes.txt": "alpha\nbeta\ngamma\n",
    "src/main.py": "print('hello')\n",
    "data.csv": "id,name\n1,Alice\n2,bob\n",
}

LINES = [
    "ls",
    "ls -l",
    "ls -la",
    "cat notes.txt",
    "cat missing.txt",
    "echo hello > greet.txt && cat greet.txt",
    "echo again >> greet.txt; wc -l greet.txt",
    "printf '%s=%d\\n' a 1 b 2 > kv.txt; cat kv.txt",
    "printf '%5s|%-3d|%03d|%x|%%\\n' ab 7 5 255; printf '%d\\n' abc",
    "cat <<EOF > h.txt\nhome is $HOME\nuser \\$USER\nEOF\ncat h.txt",
    "cat > q.txt <<'EOF'\nliteral $HOME\nEOF\ncat q.txt | wc -c",
    "mkdir -p a/b/c && ls -la a",
    "mkdir a; mkdir x/y; mkdir -p notes.txt/x; mkdir -p notes.txt",
    "touch a/b/new.txt; ls a/b; touch nodir/f",
    "rm a; rm nothing.txt; rm -f nothing.txt; echo $?",
    "mv greet.txt a/ && ls a; mv ghost.txt x.txt",
    "cp notes.txt copy.txt && cat copy.txt; cp a acopy",
    "cp -r a acopy && find acopy && rm -r acopy && ls",
    "grep -n a notes.txt; grep -c -i ALPHA notes.txt copy.txt",
    "grep -v beta notes.txt; grep zzz notes.txt; echo $?",
    "grep 'a\\(l\\|m\\)' notes.txt; grep '^[bg]' notes.txt; grep -w Alice data.csv",
    'grep x missing.txt; echo "exit $?"; grep x a; echo $?',
    "wc notes.txt; wc -w notes.txt; cat notes.txt | wc; wc a",
    "head -n 2 notes.txt; tail -n 1 notes.txt; tail -n +2 data.csv",
    "head -n 1 notes.txt missing.txt copy.txt",
    "find . -name '*.txt'",
    "find missing -name x; find . -type d",
    "cd a && pwd && ls",
    "cd ..; pwd; cd nowhere; cd notes.txt",
    'export GREETING=hi && echo "$GREETING ${GREETING}!" $HOME $NOPE.',
    "test -f notes.txt && echo file; [ -d a ] && echo dir; [ -z '' ] && [ a != b ] && echo cmp; [ -e ghost ]; echo $?",
    "test a b c; echo $?; [ 1 -lt 2 ] && echo lt; test x -eq 1; echo $?",
    "true && false || echo fallback; false; echo $?",
    "cat notes.txt | grep a | wc -l",
    "ls missing; echo $?; ls notes.txt missing a",
    "echo x > a; echo x > nodir/f; cat < nope",
    "ls -l a kv.txt; ls -ld a",
    "echo one two > w.txt; wc -c w.txt; wc -l w.txt notes.txt; wc < w.txt",
    "grep -l alpha *.txt; ls *.csv; echo *.none",
    "echo -n no newline; echo; echo -e 'tab\\there'; cat notes.txt missing.txt notes.txt",
    "mv a/greet.txt renamed.txt && cat renamed.txt && ls",
    "ls -la ~; cd ~ && pwd; cd -",
    "rm; mv; cp one; touch",
]

_LS_DATE = re.compile(r"(?m)^([-d][-rwxsStT]{9}\s+\d+\s+\S+\s+\S+\s+\d+) [A-Z][a-z]{2} [ \d]\d (?:\d\d:\d\d| \d{4}) ")


def masked(text: str) -> str:
    return _LS_DATE.sub(r"\1 <date> ", text)


@pytest.fixture(scope="module")
async def sandbox_answers() -> list[tuple[str, int | None]]:
    import docker

    from backends.shell.docker_shell import DockerShell
    from backends.shell.options import ShellConfig
    from backends.shell.owned import OwnedContainers
    from records.owners import this_process_owner

    shell = await DockerShell(OwnedContainers(docker.from_env()), ShellConfig(), owner=this_process_owner()).start()
    try:
        # The initial files as the episode host writes them (router/episodes/host.py).
        script = " && ".join(
            f"mkdir -p {shlex.quote(p.rsplit('/', 1)[0] if '/' in p else '.')} && printf %s "
            f"{shlex.quote(base64.b64encode(t.encode()).decode())} | base64 -d > {shlex.quote(p)}"
            for p, t in FILES.items()
        )
        seeded = await shell.exec(f"(cd /workspace && {script})", timeout_s=30)
        assert seeded.exit_code == 0, seeded.output
        answers = []
        for line in LINES:
            result = await shell.exec(line, timeout_s=30)
            answers.append((result.output, result.exit_code))
        return answers
    finally:
        await shell.aclose()


@pytest.fixture(scope="module")
def state_answers() -> list[tuple[str, int] | None]:
    world = new_world(clock=1_800_000_000.0)
    seed_files(world, FILES)
    answers: list[tuple[str, int] | None] = []
    for line in LINES:
        outcome = run(world, line)
        answers.append(None if outcome is None else (outcome.output, outcome.exit_code))
    return answers


@pytest.mark.parametrize("step", range(len(LINES)), ids=[line.splitlines()[0][:40] for line in LINES])
def test_the_state_answers_as_the_sandbox(step: int, sandbox_answers, state_answers) -> None:
    real, simulated = sandbox_answers[step], state_answers[step]
    assert simulated is not None, f"the state did not answer {LINES[step]!r}"
    assert (masked(simulated[0]), simulated[1]) == (masked(real[0]), real[1])
