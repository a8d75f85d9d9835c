"""simroute's public Python API: what users import (`import simroute`).

It re-exports from the rooms and holds nothing of its own:

- `load_config(path)` / `parse_config(text)` -> `Config` (raises `ConfigError` with
  the file and line of a bad key);
- `Runtime(config)`: the engine with its backends, stores and world model, opened
  with `async with Runtime(config) as runtime:` (`runtime.engine` routes calls);
- the data model: `Call`, `Observation`, `Decision`, `Route`, `Mode`, `Session`,
  `Provenance`.
"""

from router.config import Config, ConfigError, load_config, parse_config
from router.runtime.runtime import Runtime
from router.types import Call, Decision, Mode, Observation, Provenance, Route, Session

__all__ = [
    "Call",
    "Config",
    "ConfigError",
    "Decision",
    "Mode",
    "Observation",
    "Provenance",
    "Route",
    "Runtime",
    "Session",
    "load_config",
    "parse_config",
]
