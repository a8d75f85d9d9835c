"""Episodes for RL loops: an agent session opened by a reset with a seed, options and
a time to live, stepped by actions, scored by a verifier, closed or reaped.

- `options.py`: what a reset may ask for, checked against the config;
- `episode.py`: the episode's state and the infra-error test of a result;
- `routes.py`: an episode's own policy chain (its route);
- `host.py`: reset / step / state / verify / close, handed `EpisodeParts`
  (router/runtime/parts.py), never the `Runtime`; `steps.py`: a step, through the MCP
  front door's per-call work in process (router/mcp/in_process.py), its route, provenance
  and record id read from the call's record;
- `verifiers.py`: entry-point and sandbox-command verifiers;
- front doors: `rest.py` (REST + OpenAPI), `openenv_front_door.py` (OpenEnv `/ws`, `/schema`…),
  `mcp_front_door.py` (`/mcp/e/{id}`), put on `simroute serve` by `front_doors.py`.
"""
