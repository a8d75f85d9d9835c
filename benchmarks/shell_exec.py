"""Per-command cost: `DockerShell` (persistent shell) vs a raw `docker exec`.

The same commands in the same hardened sandbox, interleaved:
  docker exec   docker-py `exec_run(["bash", "-c", command])` (create, start, read, inspect)
  DockerShell   the session's persistent shell over one exec socket, exit code and cwd included
Target: DockerShell / docker exec <= 1.3.

Usage: python benchmarks/shell_exec.py [--repeat 30] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import docker
from _results import add_smoke_flag, row, write_results

from backends.shell.docker_shell import DockerShell
from backends.shell.owned import OwnedContainers
from records.owners import this_process_owner
from router.config import ShellConfig

COMMANDS = ["true", "echo hello", "ls -la /usr/bin | wc -l", "python3 -c 'print(6 * 7)'"]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    add_smoke_flag(parser)
    options = parser.parse_args()
    if options.smoke:
        options.repeat = 2
    shell = await DockerShell(OwnedContainers(docker.from_env()), ShellConfig(), owner=this_process_owner()).start()
    raw: dict[str, list[float]] = {c: [] for c in COMMANDS}
    persistent: dict[str, list[float]] = {c: [] for c in COMMANDS}
    try:
        for _ in range(options.repeat):
            for command in COMMANDS:
                started = time.perf_counter()
                exec_result = await asyncio.to_thread(
                    shell.container.exec_run, ["bash", "-c", command], user="1000:1000", workdir="/workspace"
                )
                raw[command].append(time.perf_counter() - started)
                started = time.perf_counter()
                result = await shell.exec(command, timeout_s=30)
                persistent[command].append(time.perf_counter() - started)
                assert result.output == exec_result.output.decode(), (result.output, exec_result.output)
    finally:
        await shell.aclose()
    print(f"per command, median of {options.repeat} (ms):")
    print(f"  {'command':28} {'docker exec':>12} {'DockerShell':>12} {'ratio':>7}")
    ratios = []
    rows = []
    exec_run = "docker-py exec_run of the same command in the same sandbox, interleaved"
    for command in COMMANDS:
        a, b = statistics.median(raw[command]) * 1000, statistics.median(persistent[command]) * 1000
        ratios.append(b / a)
        print(f"  {command:28} {a:12.2f} {b:12.2f} {b / a:7.3f}")
        rows.append(row(f"DockerShell, {command}", b, "ms", better="lower"))
        rows.append(row(f"docker exec, {command}", a, "ms", better="lower"))
        rows.append(row(f"DockerShell / docker exec, {command}", b / a, "ratio", baseline=exec_run, better="lower"))
    print(f"  worst ratio {max(ratios):.3f}   (target <= 1.3)")
    if not options.smoke:
        rows.append(
            row(
                "DockerShell / docker exec, worst command",
                max(ratios),
                "ratio",
                baseline=exec_run,
                target="<= 1.3",
                better="lower",
            )
        )
        write_results(__file__, "Per-command cost: the persistent shell against a raw docker exec", rows)


if __name__ == "__main__":
    asyncio.run(main())
