"""`simroute tune --prepare` as a user runs it, for real: it downloads the installed
llama-cpp-python version's source package (77 MB) and extracts llama.cpp's conversion
tools into the cache, once. Measured here at 17 s (load 5) to 39 s (load 7) on 2 cores:
above a CI test's budget, so it runs in `make tune-check` only (`make test` deselects `tune`),
and tests/unit/router/tune/test_prepare.py checks the extraction on a small package."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys

import pytest
from kit.launch import simroute_executable

# `make test` deselects it (scripts/test.sh: `-m "not tune"`); `make tune-check` runs it.
pytestmark = [pytest.mark.integration, pytest.mark.tune]


def test_prepare_fetches_the_locked_source_package_once_and_extracts_the_tools(tmp_path):
    version = importlib.metadata.version("llama-cpp-python")
    env = {**os.environ, "SIMROUTE_CACHE": str(tmp_path)}
    done = subprocess.run(
        [simroute_executable(), "tune", "--prepare"], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "tune" / f"llama-cpp-python-{version}"
    assert f"extracted to {folder}" in done.stderr
    for name in ("convert_hf_to_gguf.py", "convert_lora_to_gguf.py", "conversion/__init__.py", "gguf-py/gguf"):
        assert (folder / name).exists(), name
    assert json.loads((folder / "prepared.json").read_text())["version"] == version
    assert sorted(p.name for p in (tmp_path / "tune").iterdir()) == [folder.name]  # the package itself is gone
    # The scripts import the gguf-py they came with, put first on the path.
    found = subprocess.run(
        [sys.executable, "-c", "import gguf; print(gguf.__file__)"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(folder / "gguf-py")},
    )
    assert found.stdout.startswith(str(folder / "gguf-py")), found.stderr
    again = subprocess.run(
        [simroute_executable(), "tune", "--prepare"], capture_output=True, text=True, timeout=600, env=env
    )
    assert again.returncode == 0 and f"already in {folder}" in again.stderr
