"""The runtime assembly: a `Config` in, the engine with its policies, backends,
stores, world model and learned router out (`Runtime`), started in `start()` and
closed in `aclose()`.

`runtime.py` (`Runtime`), `policy_chain.py` (the policies a config asks for),
`simulated_side.py` (the model runner, simulator and example lookup),
`learned_service.py` (the learned router's model and statistics kept fresh).

May import everything below the front doors: `router.config`, `router.engine`,
`calls`, `router.auth`, `policies`, `backends`, `shadow`, `records`, and the HTTP
proxy it owns (`router.http`).
"""
