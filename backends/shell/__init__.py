"""The shell channel's real side: a hardened Docker sandbox per agent session.

`options.py` (the `shell` section), `container.py` (the container's spec),
`bash_stream.py` (one persistent bash, commands framed by markers), `screen.py` (the
terminal screen an observation shows), `docker_shell.py` (one session's sandbox),
`sandboxes.py` (the warm pool and per-session sandboxes), `owned.py` (containers a
dead router left behind).
"""
