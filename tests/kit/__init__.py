"""The test kit, one module per part it drives; tests import the module they need
(`from kit.launch import stdio_client`), never a copy of a helper.

launch       simroute as a user launches it: configs, MCP servers, client, records
calls        engine-level values: `make_call()`, `make_session()`
mcp          calling a tool through an MCP client the way the tests read answers
sandboxes    the shell sandboxes a test's own routers started
fixtures     pytest fixtures shared by many modules (HTTP upstreams, Redis)
engine       an engine over a real SQLite store with fake real and simulated sides
http         `simroute http-proxy` processes, scripted DNS, raw TCP listeners
browser      the browser isolation modes every browser test runs in
dashboard    generated record stores for the dashboard's tests, and what its charts painted
learned      shadow records with a known signal, and a learned router trained on them
learned_run  a store filled by a real learned-router run (the `learned` fixture)
model_stub   an OpenAI-compatible stub world model that keeps the prompts it is sent
redis        a real redis-server on a free port
serve        `simroute serve` processes and their /metrics
workload     the benchmark's own workload servers (benchmarks/servers/) and the world they act on
"""
