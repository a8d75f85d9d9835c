"""The hub: the data model, the engine, the runtime assembly, configuration, the
CLI and the front doors.

- `types.py`: the data model every room imports (`Call`, `Observation`, `Decision`,
  `Route`, `Session`); a leaf: it imports nothing of the project.
- `auth.py`: tokens, binds beyond loopback, session ids namespaced by token.
- `config/`: the config file's schema and loader.
- `engine/`: a `Call` through the policies to the backends, recorded; session state.
- `runtime/`: builds the engine, backends and stores from a config (`Runtime`).
- `mcp/`, `http/`: the front doors (MCP proxy with the shell and browser tool
  surfaces; the mitmproxy addon with the browser's egress).
- `dashboard/`: the divergence dashboard and `/metrics`.
- `reports/`: what commands report about routing, computed by the live decision code.
- `cli/`: the `simroute` command (and the demo); nothing imports it.

Dependencies point inward: front doors -> runtime -> engine -> (policies, backends,
shadow) -> `router.types`.
"""
