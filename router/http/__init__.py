"""The HTTP(S) front door: a mitmproxy addon routing every request through the engine.

`addon.py` (the addon), `proxy.py` (mitmproxy and its listeners), `tunnels.py`
(CONNECT and raw TCP), access gates, addresses, the CA, noise probes, and the
browser's egress through the proxy (`browser_egress.py`).

May import: `router.engine`, `router.auth`, `router.config`, `router.types`,
`policies`, `backends`, `shadow`.
"""
