"""simroute's public Python API: what users import (`import simroute`).

It re-exports from the rooms and holds nothing of its own:

- `load_config(path)` / `parse_config(text)` -> `Config` (raises `ConfigError` with
  the file and line of a bad key);
- `Runtime(config)`: the engine with its backends, stores and world model, opened
  with `async with Runtime(config) as runtime:` (`runtime.engine` routes calls);
- the data model: `Call`, `Observation`, `Decision`, `Route`, `Mode`, `Session`,
  `Provenance`;
- episodes for RL loops: `Env` (a gymnasium environment, registered as
  `simroute/Episode-v0`), `Episodes` (an async client of many episodes, in-process or
  on a `simroute serve`) with `Episode` and `StepResult`, and the refusals they raise:
  `EpisodeError`, `CapacityError` (429), `EpisodeNotFoundError` (404),
  `EpisodeConflictError` (409), `InvalidRequestError` (422);
- `AnyText`: the text space of `Env`'s observations and actions (with its own layout in
  gymnasium's shared memory, so `AsyncVectorEnv`'s defaults hold any unicode).
"""

from calls import Call, Decision, Mode, Observation, Provenance, Route, Session
from router.config import Config, ConfigError, load_config, parse_config
from router.runtime.runtime import Runtime
from simroute import shared_text  # noqa: F401  (registers AnyText with gymnasium's shared memory)
from simroute.client import Episode, Episodes, StepResult
from simroute.env import Env, register
from simroute.errors import CapacityError, EpisodeConflictError, EpisodeError, EpisodeNotFoundError, InvalidRequestError
from simroute.spaces import AnyText

register()  # gymnasium.make("simroute/Episode-v0", ...)

__all__ = [
    "AnyText",
    "Call",
    "CapacityError",
    "Config",
    "ConfigError",
    "Decision",
    "Env",
    "Episode",
    "EpisodeConflictError",
    "EpisodeError",
    "EpisodeNotFoundError",
    "Episodes",
    "InvalidRequestError",
    "Mode",
    "Observation",
    "Provenance",
    "Route",
    "Runtime",
    "Session",
    "StepResult",
    "load_config",
    "parse_config",
]
