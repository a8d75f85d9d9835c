"""The HTTP(S) front door: mitmproxy addons routing every request through the engine.

`proxy.py` (mitmproxy and its listeners), built from `listeners.py` (the front doors, and
the `RoutingParts` of the runtime it routes with: engine, sessions, keys; never the
runtime itself); `addon.py` (the request: routed, answered or sent upstream);
`real_answers.py` (the real route's answers, recorded); `front_door.py` (what the addons share:
gates, sessions, recorded refusals); `flows.py` (reading and answering flows);
`tunnels.py` (raw TCP after CONNECT, WebSockets); `mitmproxy_patches.py` (every change
made to mitmproxy itself) and `errors.py` (mitmproxy's own error pages); access gates,
addresses, pinning, normalisation, the CA, noise probes, and the browser's egress
through the proxy (`browser_egress.py`).

May import: `router.engine`, `router.auth`, `router.config`, `calls`,
`policies`, `backends`, `shadow`, `records`.
"""
