"""simroute's CA as a user meets it: a corrupt file is a one-line error naming the
file and the way out (`simroute ca --regenerate`), and only a folder simroute
creates is made private."""

from __future__ import annotations

import stat
import subprocess

import pytest
from kit.http import http_config
from kit.launch import free_port, simroute_executable

pytestmark = pytest.mark.integration


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [simroute_executable(), *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


def test_a_corrupt_ca_is_a_one_line_error_and_regenerate_makes_a_new_one(tmp_path):
    config = http_config(tmp_path)
    ca_dir = tmp_path / "ca"
    ca_dir.mkdir()
    (ca_dir / "mitmproxy-ca.pem").write_text("-----BEGIN PRIVATE KEY-----\nnot a key\n")
    for args in (("ca", "--config", str(config)), ("http-proxy", "--config", str(config), "--port", str(free_port()))):
        out = run(*args)
        lines = [line for line in out.stderr.strip().splitlines() if " INFO " not in line]  # the runtime's own log
        assert out.returncode == 1 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
        assert str(ca_dir / "mitmproxy-ca.pem") in lines[0] and "simroute ca --regenerate" in lines[0]
    out = run("ca", "--config", str(config), "--regenerate")
    assert out.returncode == 0 and "mitmproxy-ca-cert.pem" in out.stdout
    assert "BEGIN CERTIFICATE" in (ca_dir / "mitmproxy-ca-cert.pem").read_text()
    assert run("ca", "--config", str(config)).returncode == 0


def test_only_a_folder_simroute_creates_is_chmodded(tmp_path):
    existing = tmp_path / "shared"
    existing.mkdir(mode=0o755)
    existing.chmod(0o755)
    out = run("ca", "--config", str(http_config(tmp_path, http={"ca_dir": str(existing)})))
    assert out.returncode == 0 and stat.S_IMODE(existing.stat().st_mode) == 0o755
    created = tmp_path / "new" / "ca"
    (tmp_path / "new").mkdir()
    out = run("ca", "--config", str(http_config(tmp_path / "new", http={"ca_dir": str(created)})))
    assert out.returncode == 0 and stat.S_IMODE(created.stat().st_mode) == 0o700
