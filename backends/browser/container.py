"""How the contained browser's container is made: hardened `docker run` options,
and the launcher Playwright starts in place of Chromium. Pure, no Docker calls.

Playwright launches Chromium with `--remote-debugging-pipe`: it speaks the
DevTools protocol over the child's fds 3 and 4. The launcher is a two-line
shell script that `exec`s `docker run -i` with fd 3 as its stdin and fd 4 as
its stdout; in the image, `chromium-pipe` hands the container's stdin and stdout
to Chromium as fds 3 and 4. So Playwright drives a Chromium in a container over
the same pipe it would use on the host, and that pipe is the container's
lifeline too: when the router goes, however it goes, the driver's pipe closes,
`docker run` ends, the engine closes the container's stdin (stdin-once),
Chromium exits on the closed pipe and the container is removed (`--rm`).

The container is hardened like the shell sandbox: a non-root user, every
capability dropped, no-new-privileges, a read-only root with tmpfs over /tmp
(each launch's profile lives there) and $HOME, memory, CPU, pids and /dev/shm
limits, no volumes, no Docker socket. It has no network (`--network none`):
its only way out is the one folder mounted in it, read-only, holding a unix
socket relayed to simroute's proxy (proxy_socket.py).
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from backends.browser.options import BrowserConfig
from backends.browser.proxy_socket import INSIDE_FOLDER
from backends.shell.container import OWNER_LABEL

ROLE_LABEL = "org.simroute.role"
ROLE = "browser"
WORKDIR_PREFIX = "simroute-browser-"
USER = "1000:1000"
HOME = "/home/browser"


def run_arguments(config: BrowserConfig, *, owner: str, name: str, proxy_folder: Path | None) -> list[str]:
    """`docker run` options (before the image name) for one contained Chromium;
    `proxy_folder` holds the socket to simroute's proxy (None: no way out at all)."""
    limits = config.limits
    return [
        "--rm",
        "--interactive",  # attached stdin: closed by the engine when `docker run` ends (stdin-once)
        "--pull",
        "never",  # a missing image is reported at start, never fetched
        "--name",
        name,
        "--label",
        f"{OWNER_LABEL}={owner}",
        "--label",
        f"{ROLE_LABEL}={ROLE}",
        "--network",
        "none",
        "--hostname",
        "browser",
        "--init",  # reaps the renderer and helper processes Chromium leaves
        "--user",
        USER,
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--read-only",
        "--tmpfs",
        f"/tmp:rw,nosuid,nodev,size={limits.tmp_size},mode=1777",
        "--tmpfs",
        f"{HOME}:rw,nosuid,nodev,size=64m,uid=1000,gid=1000,mode=0700",
        "--shm-size",
        limits.shm,
        "--memory",
        limits.memory,
        "--memory-swap",
        limits.memory,
        "--cpus",
        f"{limits.cpus:g}",
        "--pids-limit",
        str(limits.pids),
        *(
            ["--mount", f"type=bind,source={proxy_folder},target={INSIDE_FOLDER},readonly"]
            if proxy_folder is not None
            else []
        ),
    ]


def container_name() -> str:
    return f"simroute-browser-{os.getpid()}-{secrets.token_hex(3)}"


def launcher_script(docker: str, run_args: list[str], image: str) -> str:
    """The executable Playwright starts instead of Chromium: the container, with
    Playwright's switches passed on to Chromium and its pipe on stdin/stdout."""
    command = shlex.join([docker, "run", *run_args, image])
    return (
        "#!/bin/sh\n"
        "# simroute: Chromium in a container; Playwright's DevTools pipe (fds 3, 4) on its stdin/stdout.\n"
        f'exec {command} "$@" <&3 >&4 3<&- 4>&-\n'
    )


def make_workdir(owner: str, under: Path | None = None) -> Path:
    """This pool's private folder (mode 0700, in the temporary folder): its owner,
    the launcher, and the folder of the proxy socket (the only part the container mounts)."""
    folder = Path(tempfile.mkdtemp(prefix=WORKDIR_PREFIX, dir=under))
    (folder / "owner").write_text(owner)
    return folder


def write_launcher(script: str, workdir: Path) -> Path:
    path = workdir / "chromium-in-container"
    path.write_text(script)
    path.chmod(0o700)
    return path


def remove_workdir(folder: Path | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def reap_workdirs(owner_is_alive: Callable[[str], bool], under: Path | None = None) -> list[Path]:
    """Remove the folders of this user's routers that are gone (killed: nothing of
    theirs ran `remove_workdir`). Returns the folders removed."""
    removed = []
    for owner_file in (under or Path(tempfile.gettempdir())).glob(f"{WORKDIR_PREFIX}*/owner"):
        try:
            if owner_file.parent.stat().st_uid != os.getuid() or owner_is_alive(owner_file.read_text().strip()):
                continue
        except OSError:  # removed meanwhile
            continue
        remove_workdir(owner_file.parent)
        removed.append(owner_file.parent)
    return removed
