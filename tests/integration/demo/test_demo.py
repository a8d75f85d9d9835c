"""`simroute demo`, the README's main command, run as a user runs it: every route
it promises (real, replay, sim, shadow, deny over MCP, shell and HTTP) shows up."""

import subprocess

import pytest
from kit.launch import simroute_executable

pytestmark = pytest.mark.integration


def test_demo_runs_every_route_it_promises(tmp_path):
    workdir = tmp_path / "demo"
    out = subprocess.run(
        [simroute_executable(), "demo", "--workdir", str(workdir)], capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL
    )
    assert out.returncode == 0 and out.stdout.rstrip().endswith("demo: ok"), out.stdout[-3000:] + out.stderr[-3000:]
    for heading in ("== session 1 ==", "== session 2 ==", "== HTTP session 2: replays session 1 ==", "== shadowed calls"):
        assert heading in out.stdout
    assert (workdir / "records.db").is_file() and (workdir / "ca" / "mitmproxy-ca-cert.pem").is_file()
    # llama.cpp's own log lines ("decode: removing memory module entries …") stay out
    # of the user's terminal: simroute routes them to its debug log (--verbose).
    terminal = out.stdout + out.stderr
    assert "decode: removing memory module" not in terminal and "llama_context" not in terminal, terminal[-3000:]
