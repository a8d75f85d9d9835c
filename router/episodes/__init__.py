"""Episodes for RL loops: an agent session opened by a reset with a seed, options and
a time to live, stepped by actions, scored by a verifier, closed or reaped.

- `options.py`: what a reset may ask for, checked against the config;
- `episode.py`: the episode's state and the infra-error test of a result;
- `routes.py`: an episode's own policy chain (its route);
- `host.py`: reset / step / state / verify / close on a runtime (in-process steps);
- `verifiers.py`: entry-point and sandbox-command verifiers;
- faces: `rest.py` (REST + OpenAPI), `openenv_face.py` (OpenEnv `/ws`, `/schema`…),
  `mcp_face.py` (`/mcp/e/{id}`), put on `simroute serve` by `faces.py`.
"""
