"""Seeded uniform draws: a hash of (seed, session key, plan, rule, call number), so a
draw depends on nothing else (no process state, no clock, no order of other calls).
BLAKE2b of a short text costs about a microsecond (benchmarks/perturbation_decision.py)."""

from __future__ import annotations

from hashlib import blake2b

_SCALE = 2.0**-64


def draw(seed: int, key: str, plan: str, rule: str, n: int, salt: str = "") -> float:
    """A uniform number in [0, 1), the same for the same arguments on any machine."""
    text = f"{seed}\x1f{key}\x1f{plan}\x1f{rule}\x1f{n}\x1f{salt}".encode()
    return int.from_bytes(blake2b(text, digest_size=8).digest()) * _SCALE
