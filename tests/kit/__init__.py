"""The test kit, one module per part it drives; tests import the module they need
(`from kit.launch import stdio_client`), never a copy of a helper.

launch       simroute as a user launches it: configs, MCP servers, client, records
calls        engine-level values: `make_call()`, `make_session()`
mcp          calling a tool through an MCP client the way the tests read answers
mcp_wire     MCP over streamable HTTP at the wire: JSON-RPC bodies written by hand
transparency the same MCP calls direct and through simroute, their answers as JSON
sandboxes    the shell sandboxes a test's own routers started
shell_world  shell world states for unit tests: a seeded state and a line's answer from it
fixtures     pytest fixtures shared by many modules (HTTP upstreams, Redis)
engine       an engine over a real SQLite store with fake real and simulated sides
records      records as both stores hold them (old rows, rows with a source)
real_answers real answers of the project's own servers, as record rows
http         `simroute http-proxy` processes, scripted DNS, raw TCP listeners
raw_upstream an HTTP/1.1 upstream on a raw socket that keeps the exact bytes it received
browser      the browser isolation modes every browser test runs in
dashboard    generated record stores for the dashboard's tests, and what its charts painted
learned      shadow records with a known signal, and a learned router trained on them
learned_run  a store filled by a real learned-router run (the `learned` fixture)
model_stub   an OpenAI-compatible stub world model that keeps the prompts it is sent
judge        a judge for tests behind the model stub, scoring by the words a candidate lacks
llama_server llama-cpp-python's OpenAI-compatible server serving a GGUF model
lora         LoRA adapters of a GGUF model, written as llama.cpp's converter writes them
tiny_llama   a tiny llama-architecture GGUF model with random weights (the tune tests)
tune_run     tuning runs as `simroute tune` leaves them once evaluated (card, candidate)
redis        a real redis-server on a free port
guard        the upstream guard's rules as scenarios on a fake clock, for each state implementation
serve        `simroute serve` processes and their /metrics
episodes     `simroute serve` with episodes and its REST front door
replicas     two `simroute serve` replicas on one real Redis store, each with an episodes client
compose      docker-compose.yml driven as a user drives it (built, up, down)
stack_clients clients of a running compose stack: health, the balancer's API, which container is which
stack_load   load on a running compose stack, and the audit of the store afterwards
export       `simroute export` run as a user runs it, and loaders of its formats
otlp         an OTLP/HTTP trace receiver for the tracing tests
fuzz         what the fuzz suites share: case counts, the seed, settings, a tally
workload     the benchmark's own workload servers (benchmarks/servers/) and the world they act on
"""
