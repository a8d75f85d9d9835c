"""The hub: the engine, the runtime assembly, configuration, the CLI and the front
doors (the data model they all speak is the package `calls`).

- `auth.py`: tokens, binds beyond loopback, session ids namespaced by token.
- `config/`: the config file's schema and loader.
- `engine/`: a `Call` through the policies to the backends, recorded; session state.
- `runtime/`: builds the engine, backends and stores from a config (`Runtime`).
- `mcp/`, `http/`: the front doors (MCP proxy with the shell and browser tool
  surfaces; the mitmproxy addon with the browser's egress).
- `dashboard/`: the divergence dashboard and `/metrics`.
- `reports/`: what commands report about routing, computed by the live decision code.
- `tune/`: `simroute tune`'s steps (training data, model card, llama.cpp's tools).
- `cli/`: the `simroute` command (and the demo); nothing imports it.

Dependencies point inward: front doors -> runtime -> engine -> (policies, backends,
shadow) -> `records` -> `calls`.
"""
