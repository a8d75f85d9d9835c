"""Shell world states for unit tests: a seeded state, and a command line's answer from
it as (output, exit code), so a test spells out only the lines and what they show."""

from __future__ import annotations

from collections.abc import Mapping

from backends.world_state.shell import ShellWorld, new_world, run, seed_files
from backends.world_state.shell.errors import Unanswerable
from backends.world_state.shell.executor import run_or_raise

CLOCK = 1_800_000_000.0  # 2027-01-15 08:00 UTC


def make_world(files: Mapping[str, str] | None = None, *, cwd: str | None = None) -> ShellWorld:
    """A fresh sandbox's state with `files` in /workspace (as an episode's files)."""
    world = new_world(clock=CLOCK)
    seed_files(world, files or {})
    if cwd is not None:
        world.cwd = cwd
    return world


def sh(world: ShellWorld, line: str) -> tuple[str, int]:
    """The answer to `line` from `world` (which it changes); fails the test when the state
    cannot answer, saying why."""
    try:
        outcome = run_or_raise(world, line)
    except Unanswerable as exc:
        raise AssertionError(f"the state did not answer {line!r}: {exc}") from exc
    return outcome.output, outcome.exit_code


def out(world: ShellWorld, line: str) -> str:
    """The output of a line that must succeed."""
    text, code = sh(world, line)
    assert code == 0, (line, text, code)
    return text


def unanswered(world: ShellWorld, line: str) -> bool:
    """Whether the state declines `line`, leaving itself untouched."""
    before = world.to_json()
    answered = run(world, line) is not None
    assert answered or world.to_json() == before, "a declined line changed the state"
    return not answered


class StandInSandbox:
    """The real side of a shell call in engine tests: a world of its own (run by the
    executor), which the session's world state never sees; answers with provenance real."""

    def __init__(self) -> None:
        self.world = new_world(clock=CLOCK)

    async def __call__(self, call):
        from calls import Observation, Provenance

        outcome = run(self.world, call.arguments["command"])
        assert outcome is not None, f"the stand-in sandbox does not run {call.arguments['command']!r}"
        result = outcome.to_result()
        return Observation([{"type": "text", "text": result.text()}], Provenance.REAL, structured=result.structured())
