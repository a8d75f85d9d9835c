"""What produces observations.

Real: `mcp/` (upstream MCP sessions, kept warm), `http/` (HTTP messages as calls and
observations), `shell/` (the Docker sandbox per session and its pool), `browser/`
(Playwright driving Chromium, on the host or contained). Simulated: `world_model/`
(GGUF in-process or an OpenAI-compatible server, with per-domain prompts and
parsers). Recorded: `replay.py`, and `alignment/` (a simulated call answered from a
recorded session that made the same calls, its values renamed). `errors.py` is the exception tree every backend
raises; `options.py` the base of each backend's own option type.

May import: `calls`, `records` and `shadow`, never the rest of `router` nor `policies`.
"""
