"""The sim route with the world's state outside the model: a simulated call is
answered, in this order, from

1. the session's world state, where it determines the answer (a shell command line the
   executor knows, against the files, cwd and variables the session's answers taught;
   an HTTP call on a JSON API's resources the session's answers and the API's
   recordings taught, backends/world_state/http_state.py): sub-provenance `state`, no
   model call;
2. a recorded real session that made the same calls under a renaming of their values
   (MCP, backends/alignment): `replay-aligned`, no model call; not where the model is
   told a world document (the recordings describe the real world, not that one);
3. the world model, told the part of the state the call touches and held to it (a
   steer: its instruction and its check, retried once with the problem stated, as
   any malformed answer is): `model+state`; with no state to tell, `model`.

Every answer's `source` says which. Background work (shadowing) and a perturbation's
steer (a mislead, a listing asked whole) go to the model as before: they must not
change the session's state, and a steered answer is the model's by design. What an
answer teaches the state is learnt after the call (router/addons/world_state.py), on
every route; a `state` answer has already applied its own effects.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from backends.alignment import AlignedReplay
from backends.shell.screen import ShellResult
from backends.world_state.http_state import RecordedApis, answer_from_state
from backends.world_state.session import FROM_STATE, WorldState
from backends.world_state.shell import run
from backends.world_state.shell_view import contradiction, state_view
from calls import Call, Observation, Provenance, Session, Simulator, Source, Steer, WorldDocuments

ALIGNED, MODEL, MODEL_STATE = "replay-aligned", "model", "model+state"


class StatefulSimulator:
    def __init__(
        self,
        inner: Simulator,
        *,
        aligned: AlignedReplay | None = None,
        recorded_apis: RecordedApis | None = None,
        on_for: Callable[[str, str], bool] = lambda channel, server: True,
        screen_lines: int = 200,
        screen_chars: int = 20_000,
    ) -> None:
        self.inner = inner
        self.aligned = aligned
        self.recorded_apis = (
            recorded_apis  # what other sessions' real HTTP answers teach (None: the session's own only)
        )
        self.on_for = on_for  # the world_state section's switch, per (channel, server)
        self.screen_lines, self.screen_chars = screen_lines, screen_chars

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)  # observers, read_ahead, domains… of the model's simulator

    async def simulate(
        self, call: Call, session: Session, *, deadline_s: float, background: bool = False, steer: Steer | None = None
    ) -> Observation:
        stateful = not background and steer is None and self.on_for(call.channel, call.server)
        if stateful and call.channel == "shell":
            answered = self._from_state(call, session)
            if answered is not None:
                return answered
        if stateful and call.channel == "http":
            stated = await answer_from_state(session.slice(WorldState).http_world(), call, self.recorded_apis, session)
            if stated is not None:
                return _sourced(stated[0], FROM_STATE, invented=True if stated[1] else None)
        if stateful and call.channel == "mcp" and self.aligned is not None and not self._told_a_world(call, session):
            found = await self.aligned.answer(call, session)
            if found is not None:
                return _sourced(found.observation, ALIGNED, record=found.record_id)
        told = self._state_steer(call, session) if stateful and call.channel == "shell" else None
        observation = await self.inner.simulate(
            call, session, deadline_s=deadline_s, background=background, steer=told or steer
        )
        if observation.source is None or observation.source.sub != MODEL:
            # An error simroute made in the model's place carries no source; an answer the
            # tool's recordings determined (gates/template.py) keeps its own.
            return observation
        return _sourced(observation, MODEL_STATE if told is not None else MODEL)

    def _told_a_world(self, call: Call, session: Session) -> bool:
        """Whether the model is told a world document for this call (the configured one, or
        the session's: an episode's `world`): real recordings describe the real world, not
        that one, so no recorded session is aligned with it."""
        own = session.find(WorldDocuments)
        told = own is not None and ("*" in own.by_channel or call.channel in own.by_channel)
        return told or getattr(self.inner, "world_document", None) is not None

    def _from_state(self, call: Call, session: Session) -> Observation | None:
        started = time.perf_counter()
        command = call.arguments.get("command")
        if not isinstance(command, str):
            return None
        world = session.slice(WorldState).shell_world()
        world.clock = max(world.clock, time.time())  # `ls -l` dates and new files' times
        outcome = run(world, command, screen_lines=self.screen_lines, screen_chars=self.screen_chars)
        if outcome is None:
            return None
        result = outcome.to_result()
        observation = Observation(
            [{"type": "text", "text": result.text()}],
            Provenance.SIM,
            is_error=result.is_error,
            structured=result.structured(),
            latency_s=time.perf_counter() - started,
        )
        return _sourced(observation, FROM_STATE, invented=True if outcome.invented else None)

    @staticmethod
    def _state_steer(call: Call, session: Session) -> Steer | None:
        command = call.arguments.get("command")
        world = session.slice(WorldState).shell
        if not isinstance(command, str) or world is None:
            return None
        frozen = world.copy()  # as it stood before this command: what the answer is checked against

        def check(observation: Observation) -> str | None:
            structured = (
                observation.structured if isinstance(observation.structured, dict) else {"output": observation.text}
            )
            return contradiction(frozen, command, ShellResult.from_structured(structured))

        return Steer("state", state_view(frozen, command), check=check)


def _sourced(observation: Observation, sub: str, **extra: Any) -> Observation:
    """`observation` with its source's `sub` set (the model's name kept where it is known)."""
    known = {key: value for key, value in extra.items() if value is not None}
    source = observation.source
    if source is None:
        observation.source = Source(sub=sub, extra=known)
    else:
        observation.source = dataclasses.replace(source, sub=sub, extra={**source.extra, **known})
    return observation
