"""Shadow records with a known signal, for the learned router's unit tests.

Tools: `get_motto` answers the same every time and is simulated faithfully;
`get_visits` counts (every real answer differs) and is simulated badly;
`get_weather` is faithful for some cities and not others (the signal is in the
argument). Rows are shaped as `Record.to_json()` writes them.
"""

from __future__ import annotations

import random
from typing import Any

FAITHFUL_CITIES = ["Oslo", "Lima", "Pune", "Kyiv", "Baku", "Doha"]
UNFAITHFUL_CITIES = ["Rome", "Cairo", "Quito", "Hanoi", "Accra", "Sofia"]


def observation(text: str, provenance: str, latency_s: float = 0.01) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": text}],
        "structured": None,
        "is_error": False,
        "provenance": provenance,
        "latency_s": latency_s,
    }


def row(
    n: int,
    *,
    tool: str,
    arguments: dict,
    real: str,
    sim: str | None,
    divergence: float | None,
    kind: str | None,
    session: str,
    step: int,
    ts: float,
    safety: str = "safe",
) -> dict[str, Any]:
    key = f"srv/{tool}/{sorted(arguments.items())}"
    return {
        "id": f"{n:016x}",
        "ts": ts,
        "session": session,
        "step": step,
        "channel": "mcp",
        "server": "srv",
        "tool": tool,
        "arguments": arguments,
        "call_key": key,
        "replay_key": key,
        "route": "shadow" if sim else "real",
        "policy": "mode",
        "reason": "",
        "safety_class": safety,
        "safety_reason": "",
        "note": "",
        "provenance": "real",
        "latency_ms": 5.0,
        "observation": observation(real, "real", 0.005),
        "shadow": observation(sim, "sim", 2.0) if sim else None,
        "divergence": divergence,
        "divergence_kind": kind,
        "divergence_evidence": {"divergent": [], "masked": []} if sim else None,
        "status": "complete",
        "occurrence": 1,
        "key_scheme": "",
        "recording": None,
        "owner": "",
    }


def generate(n: int = 900, *, seed: int = 0, start: float = 1_700_000_000.0) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows, visits = [], 0
    for i in range(n):
        session, step = f"s{i // 10}", i % 10 + 1
        pick = rng.random()
        if pick < 0.3:
            tool, arguments, real = "get_motto", {}, "carpe diem"
            faithful = rng.random() < 0.95
        elif pick < 0.6:
            visits += 1
            tool, arguments, real = "get_visits", {}, f"visits {visits}"
            faithful = rng.random() < 0.05
        else:
            city = rng.choice(FAITHFUL_CITIES + UNFAITHFUL_CITIES)
            good = city in FAITHFUL_CITIES
            tool, arguments = "get_weather", {"city": city}
            real = (
                f"{city}: sunny"
                if good
                else f"{city}: {rng.choice(['rain', 'snow', 'fog', 'hail'])} {rng.randint(0, 30)}C"
            )
            faithful = rng.random() < (0.93 if good else 0.07)
        divergence = rng.uniform(0.0, 0.12) if faithful else rng.uniform(0.45, 1.0)
        kind = (
            ("none" if divergence == 0 else "content")
            if faithful
            else rng.choice(["content", "content", "structure", "status"])
        )
        sim = real if faithful else "something else entirely"
        rows.append(
            row(
                i,
                tool=tool,
                arguments=arguments,
                real=real,
                sim=sim,
                divergence=divergence,
                kind=kind,
                session=session,
                step=step,
                ts=start + i,
            )
        )
    return rows


def train_and_save(path, rows, *, thresholds: dict[str, float] | None = None) -> None:
    """Train on `rows` and save the model at `path` (thresholds overridden when given)."""
    from policies.learned.labels import labels_from_rows
    from policies.learned.persistence import save_model
    from policies.learned.training import TrainingSettings, train

    result = train(labels_from_rows(rows), TrainingSettings(cv_folds=2))
    save_model(path, result.classifiers, {**result.thresholds, **(thresholds or {})}, n_bits=18, card={"test": True})
