"""What commands and the dashboard report about routing, computed by the same
decision code the live router runs: `explain.py` (why a call takes its route),
`learned_eval.py` (the learned router replayed over recorded calls).

May import: `router.config`, `router.engine`, `router.runtime` (the policy chain),
`calls`, `policies`, `backends`, `shadow`, `records`.
"""
