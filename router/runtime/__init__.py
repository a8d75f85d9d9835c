"""The runtime assembly: a `Config` in, the engine with its policies, backends,
stores, world model and learned router out (`Runtime`), started in `start()` and
closed in `aclose()`.

`runtime.py` (`Runtime`), `policy_chain.py` (the policies a config asks for),
`world.py` (the world-model engine, simulator and example lookup),
`learned_service.py` (the learned router's model and statistics kept fresh).

May import everything below the front doors: `router.config`, `router.engine`,
`router.types`, `router.auth`, `policies`, `backends`, `shadow`, and the HTTP
proxy it owns (`router.http`).
"""
