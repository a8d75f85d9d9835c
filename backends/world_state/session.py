"""A session's world state as a session slice (router.types.SessionSlice), shared by
router replicas: one field per kind of world (`shell`: a ShellWorld as JSON). Its
contents come from records as stored (secrets already redacted), so neither Redis
nor a prompt ever holds a secret the records would not."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from backends.world_state.shell import ShellWorld, new_world
from router.types import SessionSlice


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
