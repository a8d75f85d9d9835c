"""`simroute demo`, the README's main command, run as a user runs it: every route
it promises (real, replay, sim, shadow, deny over MCP, shell and HTTP) shows up, its
simulated answers are plausible (the entity the call asked for, no degenerate
output) and each names its sub-provenance, and it shows a perturbation and a virtual tool."""

import re
import subprocess

import pytest
from kit.launch import simroute_executable

# The bundled GGUF model against deadlines, its answers asserted: one test at a time (`serial`).
pytestmark = [pytest.mark.integration, pytest.mark.serial]


def test_demo_runs_every_route_it_promises(tmp_path):
    workdir = tmp_path / "demo"
    out = subprocess.run(
        [simroute_executable(), "demo", "--workdir", str(workdir)],
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0 and out.stdout.rstrip().endswith("demo: ok"), out.stdout[-3000:] + out.stderr[-3000:]
    for heading in (
        "== session 1 ==",
        "== session 2 ==",
        "== HTTP session 2: replays session 1 ==",
        "== shadowed calls",
    ):
        assert heading in out.stdout
    assert (workdir / "records.db").is_file() and (workdir / "ca" / "mitmproxy-ca-cert.pem").is_file()
    # llama.cpp's own log lines ("decode: removing memory module entries …") stay out
    # of the user's terminal: simroute routes them to its debug log (--verbose).
    terminal = out.stdout + out.stderr
    assert "decode: removing memory module" not in terminal and "llama_context" not in terminal, terminal[-3000:]

    # Plausible simulated answers, asserted on the demo's own output: the entity the call
    # asked for, the simulated cat showing what the recorded terminal showed, no fences.
    lines = out.stdout.splitlines()
    sim_at = [n for n, line in enumerate(lines) if re.search(r" sim +sim ", line)]
    sim_rows = [lines[n] for n in sim_at]
    # MCP Lima x2, the forecast x2, the cat and the ls, HTTP Lima x2, the rehearsed note's POST, GET and listing
    assert len(sim_rows) == 11, out.stdout[-4000:]
    assert "world model failed" not in out.stdout and "```" not in out.stdout and "keystrokes" not in out.stdout
    clock = [line for line in sim_rows if line.startswith("time_get_current_time")]
    assert len(clock) == 2 and all('{"timezone": "America/Lima"' in line for line in clock), clock
    assert sum(re.search(r'"city": ?"lima"', line) is not None for line in sim_rows) == 2, (
        sim_rows
    )  # HTTP /weather/lima
    forecast = [line for line in sim_rows if line.startswith("weather_get_forecast")]
    assert len(forecast) == 2 and all(" virtual " in line and '"city": "Lima"' in line for line in forecast), forecast
    assert any(line.startswith("shell_exec") and '"output": "hello from the sandbox' in line for line in sim_rows), (
        sim_rows
    )
    # Each simulated line is followed by its sub-provenance; the cat and the ls of the file the
    # session wrote came from the session's world state (no model call).
    assert all("sub-provenance:" in lines[n + 1] for n in sim_at), out.stdout[-4000:]
    subs = [(lines[n], lines[n + 1].split("sub-provenance:")[-1].strip()) for n in sim_at]
    shell = [(line.split()[1], sub) for line, sub in subs if line.startswith("shell_exec")]
    assert shell == [("cat", "state"), ("ls", "state")], subs
    assert "notes.txt" in [line for line, _ in subs if line.split()[:2] == ["shell_exec", "ls"]][0], subs
    # The rehearsed notes came from the session's HTTP resource state (what the first session's
    # real note taught): created as 201 with the next id, read back, listed after the real note.
    notes = [(line.split()[:3], sub) for line, sub in subs if line.startswith(("POST /notes", "GET /notes"))]
    assert notes == [
        (["POST", "/notes", "201"], "state"),
        (["GET", "/notes/2", "200"], "state"),
        (["GET", "/notes", "200"], "state"),
    ], subs
    listing = [line for line, _ in subs if line.split()[:2] == ["GET", "/notes"]][0]
    assert '"text": "check the forecast"' in listing, listing
    # A perturbation: the plan's seeded error, in both sessions, answered by simroute (provenance none).
    perturbed = out.stdout.count("perturbed: error by rule demo:oslo-clock-down (seed 7, matching call 1)")
    assert perturbed == 2 and "503 Service" in out.stdout
    assert "weather_get_forecast" in out.stdout.split("tools through simroute:")[1].splitlines()[0]
