"""Scoring an episode: the verifier named by its reset (or `episodes.default_verifier`).

- `entry_point: module:function` is called with an `EpisodeView` (the episode's
  records and final state); it returns the reward (a number or a bool), sync or async.
  Its module is imported again when its file changed (or on `POST /verifiers/reload`).
  The records it sees are the episode's steps and its reset: not its verify records.
- `command` runs in the episode's *real* sandbox; the last number it prints is the
  reward, else its exit code (0 → 1.0, anything else → 0.0). An episode whose shell
  is simulated has no sandbox to check: the command is refused with a clear error,
  never answered by the world model.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import inspect
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from calls import Route
from router.config.episodes import VerifierConfig
from router.episodes.routes import shell_is_real

if TYPE_CHECKING:
    from router.episodes.episode import Episode
    from router.runtime.parts import McpParts

_OWN_ROUTES = frozenset({Route.VERIFY, Route.CLOSE})
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


class VerifierError(RuntimeError):
    """The episode cannot be scored (no verifier, a refused command, a verifier that
    failed or answered something that is not a number); the message says why."""


@dataclass(frozen=True, slots=True)
class EpisodeView:
    """What an entry-point verifier is given."""

    episode_id: str
    seed: int | None
    options: dict[str, Any]
    state: dict[str, Any]
    records: list[dict[str, Any]]  # the episode's records, oldest first, as `simroute records --json` prints them


def reward_of_output(output: str, exit_code: int | None) -> float:
    numbers = _NUMBER.findall(output)
    if numbers:
        return float(numbers[-1])
    if exit_code is None:
        raise VerifierError("the verifier command printed no number and its exit code is unknown (timed out?)")
    return 1.0 if exit_code == 0 else 0.0


# Each entry-point module's file as it was when imported: a verifier edited on disk is
# imported again at its next use (no restart), as it is on `POST /verifiers/reload`.
_LOADED: dict[str, tuple[int, int]] = {}


def _current(module_name: str, *, force: bool = False) -> ModuleType:
    module = importlib.import_module(module_name)
    path = getattr(module, "__file__", None)
    if path is None:
        return module
    try:
        stat = os.stat(path)
    except OSError:
        return module
    seen, now = _LOADED.get(module_name), (stat.st_mtime_ns, stat.st_size)
    if force or (seen is not None and seen != now):
        with contextlib.suppress(
            OSError
        ):  # its bytecode, which a same-second rewrite of the same size would pass for current
            os.unlink(importlib.util.cache_from_source(path))
        module = importlib.reload(module)
    _LOADED[module_name] = now
    return module


def reload_verifiers(verifiers: Iterable[VerifierConfig]) -> list[str]:
    """Import every entry-point verifier's module again; the modules reloaded."""
    names = sorted({v.entry_point.partition(":")[0] for v in verifiers if v.entry_point is not None})
    for name in names:
        try:
            _current(name, force=True)
        except Exception as exc:
            raise VerifierError(f"verifier module {name!r} cannot be reloaded: {type(exc).__name__}: {exc}") from exc
    return names


def load_entry_point(spec: str) -> Callable[[EpisodeView], Any]:
    module_name, _, attribute = spec.partition(":")
    try:
        target: Any = _current(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError, SyntaxError) as exc:
        raise VerifierError(f"verifier entry point {spec!r} cannot be loaded: {exc}") from exc
    if not callable(target):
        raise VerifierError(f"verifier entry point {spec!r} is not callable")
    return target


def as_reward(value: Any, where: str) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    raise VerifierError(f"{where} returned {type(value).__name__}, not a number")


async def run_verifier(name: str, verifier: VerifierConfig, episode: Episode, parts: McpParts) -> float:
    if verifier.entry_point is not None:
        return await _entry_point(verifier, episode, parts)
    assert verifier.command is not None
    return await _command(name, verifier.command, verifier.timeout_s, episode, parts)


async def _entry_point(verifier: VerifierConfig, episode: Episode, parts: McpParts) -> float:
    assert verifier.entry_point is not None
    function = load_entry_point(verifier.entry_point)
    records = await parts.store.session_records(
        episode.session_id, before_step=episode.session.steps + 1, limit=100_000
    )
    steps = [
        r.to_json() for r in records if r.decision.route not in _OWN_ROUTES
    ]  # scoring twice scores the same records
    view = EpisodeView(episode.id, episode.seed, episode.options.model_dump(exclude_none=True), episode.state(), steps)
    try:
        async with asyncio.timeout(verifier.timeout_s):
            if inspect.iscoroutinefunction(function):
                value = await function(view)
            else:
                value = await asyncio.to_thread(function, view)
    except TimeoutError as exc:
        raise VerifierError(f"verifier {verifier.entry_point!r} did not answer within {verifier.timeout_s:g}s") from exc
    except VerifierError:
        raise
    except Exception as exc:
        raise VerifierError(f"verifier {verifier.entry_point!r} raised {type(exc).__name__}: {exc}") from exc
    return as_reward(value, f"verifier {verifier.entry_point!r}")


async def _command(name: str, command: str, timeout_s: float, episode: Episode, parts: McpParts) -> float:
    shell = parts.shell
    session = episode.session
    if shell is None:
        raise VerifierError(f"verifier {name!r} runs a command, and this server's shell channel is off")
    if not shell_is_real(session, parts.engine.policies):
        raise VerifierError(
            f"verifier {name!r} runs a command in the episode's real sandbox, and this episode's shell is simulated: "
            "a simulated shell is not verified by a command (the world model would only imagine its answer)"
        )
    # In a subshell, from /workspace: the agent's shell keeps its directory and variables.
    result = await shell.exec(session.id, f"(cd /workspace && {command})", timeout_s=timeout_s)
    if result.error is not None:
        raise VerifierError(f"verifier {name!r}: {result.error}")
    return reward_of_output(result.output, result.exit_code)
