"""Rehearsal on a fork: how long forking a session's sandbox takes, and how a forked
run differs from a real run.

Latency: a session's real sandbox is filled (random files of 10 MB and of 100 MB, or a
git repository of 1,000 commits), then forked `--rounds` times (each fork removed
before the next), its first call on the fork timed: measuring,
copying `/workspace`, `/tmp` and `$HOME` and the shell's cwd and exported variables
into a fresh sandbox, and running `true` there. Target: p50 <= 500 ms at 10 MB.

Differences: a probe (environment, cwd, hostname, uid, `/tmp`, `$HOME`, git config)
and a workload of destructive shell and git commands run on the real sandbox and on
its fork, made from the same state; every line that differs is listed.

Usage: python benchmarks/fork_rehearsal.py [--rounds 10] [--smoke]
(--smoke: 1 round of a 1 MB sandbox and a 20-commit repository, no results file)
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import os
import statistics
import time

from _results import add_smoke_flag, row, write_results

from backends.shell.forks import ShellForks
from backends.shell.sandboxes import Sandboxes
from router.config import ShellConfig

MB = 1024 * 1024


def files_setup(size: int) -> str:
    """Random files (incompressible), 1 MB each, in a nested tree, plus shell state."""
    count = max(1, size // MB)
    return (
        f"mkdir -p data/a/b && for i in $(seq {count}); do head -c {MB} /dev/urandom > data/a/b/f$i; done && "
        "echo scratch > /tmp/scratch && export STAGE=fork && cd data/a"
    )


def git_setup(commits: int) -> str:
    return (
        "git config --global user.email agent@example.com && git config --global user.name agent && "
        "git init -q repo && cd repo && "
        f"for i in $(seq {commits}); do echo $i >> log.txt; git add log.txt; git commit -q -m c$i; done"
        " && git branch feature"
    )


PROBE = (
    'echo "cwd=$PWD"; hostname; id; env | sort | grep -v "^_="; '
    "ls -la /tmp | tail -n +2 | awk '{print $1, $3, $9}'; "
    "ls -la ~ | tail -n +2 | awk '{print $1, $3, $9}'; git config --global --list 2>&1; "
    "ps -e -o comm= | grep -v -e '^ps$' | sort"
)
WORKLOAD = (
    "cd /workspace/repo && git reset -q --hard HEAD~3 && git log --oneline | wc -l",
    "cd /workspace/repo && git branch -D feature && git branch --list",
    "cd /workspace/repo && git clean -fdx && git status --short | wc -l",
    "rm -rf /workspace/repo/.git/hooks && ls /workspace/repo/.git | sort",
    "find /tmp -mindepth 1 -maxdepth 1 ! -name '.simroute*' -delete && ls -A /tmp | grep -v '^.simroute' | wc -l",
    "truncate -s 0 /workspace/repo/log.txt && wc -c < /workspace/repo/log.txt",
)


async def fork_latency(sandboxes: Sandboxes, setup: str, rounds: int, label: str) -> list[float]:
    """`rounds` forks of one session's state (set up once), each removed before the next."""
    forks = ShellForks(sandboxes, max_bytes=1024 * MB, max_per_group=2, copy_timeout_s=120)
    session = f"bench-{label}"
    result = await sandboxes.exec(session, setup, timeout_s=600)
    assert result.exit_code == 0, result.text()
    samples = []
    try:
        for _ in range(rounds):
            await sandboxes.wait_ready()
            started = time.perf_counter()
            result, _ = await forks.exec(session, "true", timeout_s=30)
            samples.append(time.perf_counter() - started)
            assert result.exit_code == 0, result.text()
            await forks.close_session(session)
    finally:
        await forks.close_session(session)
        await sandboxes.close_session(session)
    return samples


async def differences(sandboxes: Sandboxes, commits: int) -> list[str]:
    forks = ShellForks(sandboxes, max_bytes=1024 * MB, max_per_group=2, copy_timeout_s=120)
    session = "bench-diff"
    try:
        # A background job: it is not forked (listed among the differences).
        setup = git_setup(commits) + " && echo note > /tmp/note && (sleep 600 >/dev/null 2>&1 &)"
        result = await sandboxes.exec(session, setup, timeout_s=600)
        assert result.exit_code == 0, result.text()
        diffs = []
        for command in (PROBE, *WORKLOAD):
            real = await sandboxes.exec(session, command, timeout_s=60)
            forked, _ = await forks.exec(session, command, timeout_s=60)
            for line in difflib.unified_diff(
                real.text().splitlines(), forked.text().splitlines(), "real", "fork", lineterm="", n=0
            ):
                if not line.startswith(("---", "+++", "@@")):
                    label = "probe" if command is PROBE else command.split("&&")[-1].strip()[:40]
                    diffs.append(f"{label}: {line}")
        return diffs
    finally:
        await forks.close_session(session)
        await sandboxes.close_session(session)


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    add_smoke_flag(parser)
    options = parser.parse_args()
    cases = [
        ("10 MB of files", files_setup(10 * MB)),
        ("100 MB of files", files_setup(100 * MB)),
        ("git, 1,000 commits", git_setup(1000)),
    ]
    commits = 1000
    if options.smoke:
        options.rounds, commits = 1, 20
        cases = [("1 MB of files", files_setup(MB)), ("git, 20 commits", git_setup(20))]
    sandboxes = await Sandboxes(ShellConfig(pool_size=1)).start()
    results = {}
    try:
        for label, setup in cases:
            results[label] = await fork_latency(sandboxes, setup, options.rounds, label.split()[0])
        diffs = await differences(sandboxes, commits)
    finally:
        await sandboxes.aclose()
    print(f"fork latency, first forked call `true` ({options.rounds} rounds; load average {os.getloadavg()[0]:.2f}):")
    for label, samples in results.items():
        print(f"  {label:22s} p50 {pct(samples, 0.5):8.1f} ms   p99 {pct(samples, 0.99):8.1f} ms")
    print(f"differences between a real run and a forked run ({len(diffs)} lines):")
    for line in diffs:
        print(f"  {line}")
    if not options.smoke:
        rows = []
        for label, samples in results.items():
            target = "<= 500" if label.startswith("10 MB") else None
            rows.append(row(f"fork, {label}, p50", pct(samples, 0.5), "ms", target=target, better="lower"))
            rows.append(row(f"fork, {label}, p99", pct(samples, 0.99), "ms", better="lower"))
        rows.append(row("lines differing, real run against forked run", len(diffs), "lines", better="lower"))
        write_results(__file__, "Rehearsal on a fork: fork latency and forked-run differences", rows)
    print(f"median fork, all cases: {statistics.median([s for v in results.values() for s in v]) * 1000:.1f} ms")


if __name__ == "__main__":
    asyncio.run(main())
