"""A session's world state as a session slice (router.types.SessionSlice), shared by
router replicas: one field per kind of world (`shell`: a ShellWorld as JSON). Its
contents come from records as stored (secrets already redacted), so neither Redis
nor a prompt ever holds a secret the records would not."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from backends.shell.screen import ShellResult
from backends.world_state.shell import ShellWorld, new_world, observe, run
from backends.world_state.shell.filesystem import FILE
from router.types import Observation, Provenance, SessionSlice

FROM_STATE = "state"  # the sub-provenance of an answer the state gave itself
SUMMARY_PATHS = 200


@dataclass(slots=True)
class WorldState(SessionSlice):
    key: ClassVar[str] = "world"
    shell: ShellWorld | None = None

    def shell_world(self) -> ShellWorld:
        """The shell's state, a fresh sandbox's until the session's answers tell more."""
        if self.shell is None:
            self.shell = new_world()
        return self.shell

    def fields(self) -> dict[str, str]:
        return {"shell": json.dumps(self.shell.to_json(), ensure_ascii=False, separators=(",", ":"))} if self.shell is not None else {}

    def merge(self, fields: Mapping[str, str]) -> None:
        # The shared copy is the newest any replica saved: it stands for the whole world.
        if "shell" in fields:
            self.shell = ShellWorld.from_json(json.loads(fields["shell"]))

    def learn(self, command: str, served: Observation, *, at: float, replaying: bool = False) -> bool:
        """What one shell answer the agent got teaches the state (every route): the line's
        effects and what the answer shows, a simulated answer's marked invented. An answer
        the state gave itself applied its effects when it was made; `replaying` (a state
        rebuilt from records) runs it again. `at`: when (the state's clock: `ls -l` dates,
        new files' times). False: the answer taught nothing."""
        structured = served.structured if isinstance(served.structured, dict) else None
        if structured is None:
            return False  # an answer that does not show the shell (an unparsed simulation)
        world = self.shell_world()
        world.clock = max(world.clock, at)
        if served.source is not None and served.source.sub == FROM_STATE:
            return run(world, command) is not None if replaying else True
        observe(world, command, ShellResult.from_structured(structured), provenance=served.provenance)
        return True

    def summary(self) -> dict[str, Any]:
        """What the state holds, for people (`simroute explain`, an episode's `state`): the
        shell's cwd, last exit code and the files it knows (size, or unknown content;
        invented when a simulated answer taught it), the first SUMMARY_PATHS of them."""
        if self.shell is None:
            return {}
        files: dict[str, Any] = {}
        for path, node in sorted(self.shell.fs.nodes.items()):
            if node.kind != FILE or len(files) >= SUMMARY_PATHS:
                continue
            known = {"bytes": len(node.content.encode())} if node.content is not None else {"content": "unknown"}
            files[path] = {**known, **({"invented": True} if node.invented else {})}
        return {"shell": {"cwd": self.shell.cwd, "exit_code": self.shell.exit_code, "files": files}}


def rebuilt(turns: list[tuple[str, Observation, bool, float]]) -> WorldState:
    """A session's world state rebuilt from its shell records, oldest first: (command,
    served answer, perturbed, when). A perturbed answer and simroute's own teach nothing."""
    state = WorldState()
    for command, served, perturbed, at in turns:
        if not perturbed and served.provenance is not Provenance.NONE:
            state.learn(command, served, at=at, replaying=True)
    return state
