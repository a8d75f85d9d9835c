"""A session's world state as a session slice (calls.SessionSlice), shared by
router replicas: one field per kind of world (`shell`: a ShellWorld as JSON; `http`:
an HttpWorld, the session's JSON APIs' resources, as JSON). Its
contents come from records as stored (secrets already redacted), so neither Redis
nor a prompt ever holds a secret the records would not."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from backends.shell.screen import ShellResult
from backends.world_state import http
from backends.world_state.http import HttpWorld
from backends.world_state.http import caps as http_caps
from backends.world_state.shell import ShellWorld, new_world, observe, run
from backends.world_state.shell import caps as shell_caps
from backends.world_state.shell.caps import MAX_CONTENT_BYTES
from backends.world_state.shell.filesystem import FILE
from calls import Call, Observation, Provenance, SessionSlice

FROM_STATE = "state"  # the sub-provenance of an answer the state gave itself
SUMMARY_PATHS = 200


@dataclass(slots=True)
class WorldState(SessionSlice):
    key: ClassVar[str] = "world"
    shell: ShellWorld | None = None
    http: HttpWorld | None = None

    def shell_world(self) -> ShellWorld:
        """The shell's state, a fresh sandbox's until the session's answers tell more."""
        if self.shell is None:
            self.shell = new_world()
        return self.shell

    def http_world(self) -> HttpWorld:
        """The JSON APIs' resources, none known until the session's answers (or recordings) tell."""
        if self.http is None:
            self.http = HttpWorld()
        return self.http

    def fields(self) -> dict[str, str]:
        kinds = {"shell": self.shell, "http": self.http}
        return {name: _compact(world.to_json()) for name, world in kinds.items() if world is not None}

    def field(self, name: str) -> str | None:
        world = {"shell": self.shell, "http": self.http}.get(name)
        return _compact(world.to_json()) if world is not None else None

    def merge(self, fields: Mapping[str, str]) -> None:
        # The shared copy is the newest any replica saved: it stands for the whole world.
        if "shell" in fields:
            self.shell = ShellWorld.from_json(json.loads(fields["shell"]))
        if "http" in fields:
            self.http = HttpWorld.from_json(json.loads(fields["http"]))

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

    def learn_call(self, call: Call, served: Observation, *, at: float, replaying: bool = False) -> bool:
        """What one answer the agent got teaches the state, by the call's channel (see
        `learn` for the shell): an HTTP call's effects on the resources it names and what
        its answer shows of them (backends/world_state/http/observe.py). False: nothing."""
        if call.channel == "shell":
            command = call.arguments.get("command")
            learnt = isinstance(command, str) and self.learn(command, served, at=at, replaying=replaying)
        elif call.channel != "http":
            return False
        elif served.source is not None and served.source.sub == FROM_STATE:
            # Its effects were applied when it was made; rebuilt from records (where the
            # recordings it started from are not), what it showed is taken in as simulated.
            learnt = http.observe(self.http_world(), call, served, provenance=Provenance.SIM) if replaying else True
        else:
            learnt = http.observe(self.http_world(), call, served, provenance=served.provenance)
        if learnt:
            self.bound()
        return learnt

    def relearn(self, turns: Iterable[tuple[Call, Observation, bool, float]]) -> None:
        """What recorded turns teach, oldest first: (call, served answer, perturbed, when).
        A perturbed answer and simroute's own teach nothing."""
        for call, served, perturbed, at in turns:
            if not perturbed and served.provenance is not Provenance.NONE:
                self.learn_call(call, served, at=at, replaying=True)

    def copy(self) -> WorldState:
        """An independent copy: what one answer does to it leaves this one as it was."""
        return WorldState(
            shell=self.shell.copy() if self.shell is not None else None,
            http=self.http.copy() if self.http is not None else None,
        )

    def bound(self) -> None:
        """One content cap for the whole session (MAX_CONTENT_BYTES), whatever kinds of
        state it holds: each kind keeps itself within the cap, and where together they
        pass it, the larger gives up contents down to what the other leaves (at least
        half the cap each), largest contents first, as each kind's own cap does."""
        if self.shell is None or self.http is None:
            return
        shell_bytes, http_bytes = shell_caps.content_bytes(self.shell.fs), http_caps.content_bytes(self.http)
        if shell_bytes + http_bytes <= MAX_CONTENT_BYTES:
            return
        half = MAX_CONTENT_BYTES // 2
        if shell_bytes >= http_bytes:
            shell_caps.enforce(self.shell.fs, max_bytes=max(MAX_CONTENT_BYTES - http_bytes, half))
            http_caps.enforce(self.http, max_bytes=MAX_CONTENT_BYTES - shell_caps.content_bytes(self.shell.fs))
        else:
            http_caps.enforce(self.http, max_bytes=max(MAX_CONTENT_BYTES - shell_bytes, half))
            shell_caps.enforce(self.shell.fs, max_bytes=MAX_CONTENT_BYTES - http_caps.content_bytes(self.http))

    def summary(self) -> dict[str, Any]:
        """What the state holds, for people (`simroute explain`, an episode's `state`): the
        shell's cwd, last exit code and the files it knows (size, or unknown content;
        invented when a simulated answer taught it), the first SUMMARY_PATHS of them."""
        shown = {"http": _http_summary(self.http)} if self.http is not None and self.http.apis else {}
        if self.shell is None:
            return shown
        files: dict[str, Any] = {}
        for path, node in sorted(self.shell.fs.nodes.items()):
            if node.kind != FILE or len(files) >= SUMMARY_PATHS:
                continue
            known = {"bytes": len(node.content.encode())} if node.content is not None else {"content": "unknown"}
            files[path] = {**known, **({"invented": True} if node.invented else {})}
        return {"shell": {"cwd": self.shell.cwd, "exit_code": self.shell.exit_code, "files": files}, **shown}


def rebuilt(turns: Iterable[tuple[Call, Observation, bool, float]]) -> WorldState:
    """A session's world state rebuilt from its shell and HTTP records, oldest first."""
    state = WorldState()
    state.relearn(turns)
    return state


def _compact(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _http_summary(world: HttpWorld) -> dict[str, Any]:
    """Per API and collection: how many resources (with unknown contents, invented),
    their first ids, those known gone, whether every member is known."""
    shown: dict[str, Any] = {}
    for server, api in sorted(world.apis.items()):
        collections = {}
        for path, collection in sorted(api.collections.items())[:SUMMARY_PATHS]:
            items = sorted(collection.items.items(), key=lambda pair: pair[1].order)
            collections[path] = {
                "resources": len(items),
                "ids": [key for key, _ in items[:20]],
                "unknown": sum(item.body is None for _, item in items),
                "invented": sum(item.invented for _, item in items),
                "gone": len(collection.gone),
                "complete": collection.complete,
            }
        shown[server] = {"id_field": api.id_field, "collections": collections}
    return shown
