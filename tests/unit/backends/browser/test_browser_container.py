"""The contained browser's `docker run` options and launcher (pure; the real
container is in tests/integration/test_browser.py and test_browser_isolation.py)."""

from __future__ import annotations

import shlex
import stat
from pathlib import Path

import pytest

from backends.browser.container import (
    ROLE_LABEL,
    launcher_script,
    make_workdir,
    reap_workdirs,
    remove_workdir,
    run_arguments,
    write_launcher,
)
from backends.shell.container import OWNER_LABEL
from router.config import ConfigError, parse_config


def options_of(args: list[str]) -> dict[str, list[str]]:
    """`--flag value` pairs (flags without a value map to [])."""
    found: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        flag = args[i]
        if i + 1 < len(args) and not args[i + 1].startswith("--"):
            found.setdefault(flag, []).append(args[i + 1])
            i += 2
        else:
            found.setdefault(flag, [])
            i += 1
    return found


def test_the_container_is_hardened_and_labelled_with_its_owner():
    config = parse_config("browser:\n  limits: {memory: 3g, pids: 2000}\n").browser
    options = options_of(
        run_arguments(config, owner="host:1:2", name="simroute-browser-1-abc", proxy_folder=Path("/tmp/x"))
    )
    assert {"--rm", "--interactive", "--read-only", "--init"} <= set(options)
    assert options["--user"] == ["1000:1000"] and options["--cap-drop"] == ["ALL"]
    assert options["--security-opt"] == ["no-new-privileges"]
    assert options["--memory"] == ["3g"] and options["--memory-swap"] == ["3g"] and options["--pids-limit"] == ["2000"]
    assert options["--shm-size"] == ["256m"] and options["--pull"] == ["never"]
    # No network; the one mount is the folder of the proxy socket, read-only.
    assert options["--network"] == ["none"]
    assert options["--mount"] == ["type=bind,source=/tmp/x,target=/run/simroute,readonly"]
    assert options["--label"] == [f"{OWNER_LABEL}=host:1:2", f"{ROLE_LABEL}=browser"]
    assert all(mount.split(":")[0] in ("/tmp", "/home/browser") for mount in options["--tmpfs"])
    # No volumes, no Docker socket, nothing published, no extra privileges.
    assert not {"--volume", "-v", "--publish", "-p", "--privileged", "--cap-add", "--device"} & set(options)
    without_proxy = options_of(run_arguments(config, owner="host:1:2", name="n", proxy_folder=None))
    assert "--mount" not in without_proxy and without_proxy["--network"] == ["none"]


def test_limits_default_to_what_chromium_needs():
    limits = parse_config("").browser.limits
    assert (limits.memory, limits.pids, limits.shm) == ("2g", 1024, "256m")


def test_the_launcher_runs_the_container_on_playwrights_pipe(tmp_path):
    script = launcher_script("/usr/bin/docker", ["--rm", "--name", "a b"], "simroute-browser:latest")
    last = script.splitlines()[-1]
    assert last.startswith("exec /usr/bin/docker run --rm --name 'a b' simroute-browser:latest \"$@\"")
    assert last.endswith("<&3 >&4 3<&- 4>&-")
    assert shlex.split(last)[:6] == ["exec", "/usr/bin/docker", "run", "--rm", "--name", "a b"]
    workdir = make_workdir("host:1:2")
    try:
        path = write_launcher(script, workdir)
        assert path.read_text() == script and (workdir / "owner").read_text() == "host:1:2"
        assert stat.S_IMODE(path.stat().st_mode) == 0o700 and stat.S_IMODE(workdir.stat().st_mode) == 0o700
    finally:
        remove_workdir(workdir)
    assert not workdir.exists()


def test_a_killed_routers_folder_is_reaped_a_live_ones_kept(tmp_path):
    gone, alive = make_workdir("host:1:gone", tmp_path), make_workdir("host:2:alive", tmp_path)
    try:
        removed = reap_workdirs(lambda owner: owner.endswith("alive"), tmp_path)
        assert gone in removed and alive not in removed
        assert not gone.exists() and alive.exists()
    finally:
        remove_workdir(gone)
        remove_workdir(alive)


def test_isolation_is_auto_container_or_host():
    assert parse_config("").browser.isolation == "auto"
    assert parse_config("browser: {isolation: container}").browser.isolation == "container"
    with pytest.raises(ConfigError) as info:
        parse_config("browser:\n  isolation: vm\n", source="s.yaml")
    assert "s.yaml:2: browser.isolation" in str(info.value)
