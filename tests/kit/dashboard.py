"""Generated record stores for the dashboard's tests and benchmark: records spread
over the last day across channels, tools and routes, some shadowed with divergence
evidence, and one known divergent record."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from calls import Call, Decision, Observation, Provenance, Route, Source
from records.record import Record
from records.store.sqlite.store import SQLiteStore

TOOLS = [
    ("mcp", "time", "get_current_time"),
    ("mcp", "toolbox", "echo"),
    ("mcp", "weather", "forecast"),
    ("shell", "shell", "run"),
    ("http", "api.example", "GET"),
]
KNOWN_PATH = "$.result.temperature"  # the canonical form's path (shadow/compare/observation_forms.py)


# The subs a shadow side comes with: the world state, the model, and none named (an older record).
SHADOW_SOURCES = (Source(sub="state"), Source(sub="model", model="stub.gguf"), None)


def observation(provenance: Provenance, temperature: float, *, latency_s: float = 0.02) -> Observation:
    return Observation(
        content=[{"type": "text", "text": f"{temperature} C"}],
        structured={"temperature": temperature, "unit": "C", "at": "12:00"},
        provenance=provenance,
        latency_s=latency_s,
    )


def generated_record(rng: random.Random, ts: float, n: int, *, session: str | None = None) -> Record:
    channel, server, tool = TOOLS[n % len(TOOLS)]
    route = rng.choice([Route.REAL, Route.REAL, Route.SIM, Route.REPLAY, Route.SHADOW])
    provenance = {
        Route.REAL: Provenance.REAL,
        Route.SIM: Provenance.SIM,
        Route.REPLAY: Provenance.REPLAY,
        Route.SHADOW: Provenance.REAL,
    }[route]
    temperature = round(rng.uniform(-5, 30), 1)
    record = Record(
        call=Call(
            channel, server, tool, {"city": rng.choice(["Oslo", "Lima", "Pune"])}, session or f"session-{n // 20}"
        ),
        decision=Decision(route, "mode", f"generated {route}"),
        served=observation(provenance, temperature, latency_s=rng.uniform(0.001, 0.5)),
        step=n % 20 + 1,
        call_key=f"{server}.{tool}:{n % 7}",
        ts=ts,
    )
    record.id = f"{int(ts * 1e9):016x}{n:016x}"
    if route == Route.SHADOW:
        diverges = rng.random() < 0.4
        sim_temperature = temperature + 7 if diverges else temperature
        record.shadow = observation(Provenance.SIM, sim_temperature)
        # How the simulated side was made (per-sub fidelity): by position, the random draws unchanged.
        record.shadow.source = SHADOW_SOURCES[n % len(SHADOW_SOURCES)]
        record.divergence = 0.5 if diverges else 0.0
        record.divergence_kind = "content" if diverges else "none"
        record.divergence_evidence = {
            "divergent": [{"path": KNOWN_PATH, "kind": "content", "real": temperature, "sim": sim_temperature}]
            if diverges
            else [],
            "masked": ["$.result.at"],
            "note": "",
        }
    return record


def known_divergent_record(ts: float) -> Record:
    record = Record(
        call=Call("mcp", "weather", "forecast", {"city": "Reykjavik"}, "session-known"),
        decision=Decision(Route.SHADOW, "mode", "shadow: compare the world model"),
        served=observation(Provenance.REAL, 3.5),
        step=1,
        call_key="weather.forecast:known",
        ts=ts,
        shadow=observation(Provenance.SIM, 21.5),
        divergence=0.9,
        divergence_kind="content",
        divergence_evidence={
            "divergent": [{"path": KNOWN_PATH, "kind": "content", "real": 3.5, "sim": 21.5}],
            "masked": ["$.result.at"],
            "note": "",
        },
    )
    record.id = f"{int(ts * 1e9):016x}{'known':0>16}"
    return record


async def fill_store(path: Path, count: int, *, now: float, **options: Any) -> dict[str, Any]:
    """`fill` a SQLite store at `path`."""
    store = await SQLiteStore(path).open()
    try:
        return await fill(store, count, now=now, **options)
    finally:
        await store.aclose()


async def fill(
    store: Any, count: int, *, now: float, span_s: float = 86000.0, seed: int = 7, batch: int = 5000
) -> dict[str, Any]:
    """Write `count` generated records spread over `span_s` before `now`, plus the known
    divergent one, into an open store; returns what the tests check against."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for n in range(count):
        rows.append(generated_record(rng, now - span_s + span_s * n / count, n).to_json())
        if len(rows) >= batch:
            await store.upsert(rows)
            rows = []
    known = known_divergent_record(now - 60)
    rows.append(known.to_json())
    diverted = Record(  # the same session's next step, kept away from the real world by rehearsal
        call=Call("mcp", "weather", "set_alert", {"city": "Reykjavik"}, "session-known"),
        decision=Decision(Route.SIM, "rehearsal", "rehearsal diverted a write to sim"),
        served=observation(Provenance.SIM, 3.5),
        step=2,
        call_key="weather.set_alert:known",
        ts=now - 59,
    )
    diverted.id = f"{int(diverted.ts * 1e9):016x}{'diverted':0>16}"
    rows.append(diverted.to_json())
    await store.upsert(rows)
    return {"known_id": known.id, "diverted_id": diverted.id, "count": count + 2}


SHELL_REAL = "total 12\n-rw-r--r-- 1 agent agent 120 notes.txt\nbuilt at 2026-11-23T10:00:00Z\nok: 3 files"
SHELL_SIM = "total 12\n-rw-r--r-- 1 agent agent 120 notes.txt\nbuilt at 2026-11-23T11:30:00Z\nok: 5 files"
SHELL_DIVERGENT_LINE, SHELL_NOISY_LINE = 4, 3  # "ok: 3 files" vs "ok: 5 files"; the build time differs as noise


def shell_record(ts: float) -> Record:
    """A shadowed shell command whose screen diverges on one line and differs in a
    timestamp on another, its evidence from the real comparison (shadow/compare/divergence.py)."""
    from shadow.compare.divergence import compare

    def screen(output: str, provenance: Provenance) -> Observation:
        return Observation(
            content=[{"type": "text", "text": f"{output}\n[exit code 0, cwd /workspace]"}],
            structured={"output": output, "exit_code": 0, "cwd": "/workspace"},
            provenance=provenance,
        )

    real, sim = screen(SHELL_REAL, Provenance.REAL), screen(SHELL_SIM, Provenance.SIM)
    found = compare(real, sim, channel="shell")
    record = Record(
        call=Call("shell", "shell", "run", {"command": "ls -l && make"}, "session-shell"),
        decision=Decision(Route.SHADOW, "mode", "shadow: compare the world model"),
        served=real,
        step=1,
        call_key="shell.run:known",
        ts=ts,
        shadow=sim,
        divergence=found.score,
        divergence_kind=found.kind,
        divergence_evidence=found.evidence,
    )
    record.id = f"{int(ts * 1e9):016x}{'shell':0>16}"
    return record


def painted_pixels(page, canvas) -> int:
    """How many pixels of a chart's canvas are drawn on (Playwright's sync page)."""
    return canvas.evaluate(
        "c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        " let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }"
    )
