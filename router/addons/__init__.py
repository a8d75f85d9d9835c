"""Per-call features, one module (or folder) each, plugged into the engine as call
addons (router/engine/addons.py has the contract; router/runtime/addon_chain.py
assembles them in order):

- `virtual_servers`: a virtual MCP server's call never goes real;
- `perturbation/`: seeded faults, delays and changed answers (with their shapes and pages);
- `upstream_guard/`: concurrency caps, budgets and circuit breakers around real sends;
- `noise`: the noise learner fed with real answers and probes;
- `stated_facts`: facts answers stated, kept in session state for the world model;
- `policy_marks`: what policies learn from a finished call (rehearsal, learned router);
- `shell_state`: the session's shell cwd and last exit code, from every route's answer;
- `tracing`: an OpenTelemetry span per call;
- `shadow_sampling`: the simulated side run off the agent's path and compared.

Addons import the engine's contract, never each other (an import-linter contract).
"""
