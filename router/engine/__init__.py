"""The engine: a `Call` through the policies, the decided route run against the
backends, the record handed to the store before the agent sees the answer.

`engine.py` (`Engine`, `Pending`, `Outcome`), `sessions.py` (the agent sessions a front door
opens, with an idle reaper and a cap), `replay_modes.py` (VCR-style record modes),
`tool_catalog.py` (the MCP tool definitions the safety gate reads). The per-session
counters and marks a call claims, kept here or in Redis: records/shared_state/.

May import: `calls`, `router.auth`, `policies`, `backends`, `records`. Not the
runtime, the config, a front door or the CLI.
"""
