"""What the project's sandbox is, as far as an answer from state must match it.

Read from the image (deploy/sandbox/Dockerfile: Debian trixie, GNU coreutils 9.7,
bash 5.2) as the shell channel runs it (backends/shell/container.py and
bash_stream.py): user agent (uid/gid 1000), /workspace, /tmp and /home/agent are
tmpfs mounts, the rest of the root filesystem is the image's, read-only.
"""

from __future__ import annotations

USER = "agent"
ROOT = "root"
HOME = "/home/agent"
WORKSPACE = "/workspace"
TMP = "/tmp"

# The environment of the channel's shell (`env` in a fresh sandbox; OLDPWD is unset
# until the first `cd`). PWD and OLDPWD are kept by `cd`.
ENV: dict[str, str] = {
    "GIT_PAGER": "cat",
    "HOME": HOME,
    "HOSTNAME": "sandbox",
    "LANG": "C.UTF-8",
    "PAGER": "cat",
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "PWD": WORKSPACE,
    "SHLVL": "1",
    "TERM": "dumb",
}

FILE_MODE = 0o644  # umask 022
DIR_MODE = 0o755

# tmpfs sizes a directory 40 bytes plus 20 per entry, and counts no blocks for it;
# a file takes whole 4 KiB pages.
TMPFS_DIR_BASE = 40
TMPFS_DIR_ENTRY = 20
TMPFS_PAGE = 4096

# Directories of the image whose metadata an answer shows (`ls -la` in /workspace shows
# `..`, `ls -la ~` shows /home) but whose listings the state does not hold:
# (mode, owner, links, size, KiB blocks).
IMAGE_DIRS: dict[str, tuple[int, str, int, int, int]] = {
    "/": (0o755, ROOT, 18, 4096, 4),
    "/home": (0o755, ROOT, 3, 4096, 4),
}
# The tmpfs mounts: (mode, owner).
MOUNTS: dict[str, tuple[int, str]] = {
    WORKSPACE: (0o755, USER),
    TMP: (0o1777, ROOT),
    HOME: (0o700, USER),
}
# The channel writes each command's start time here (bash_stream.py): a file of
# /tmp whose content the state never knows.
COMMAND_START_FILE = "/tmp/.simroute-command-start"


def owner_of_new(path: str) -> str:
    """Who owns a path the state learns of from an answer: the agent below its own tmpfs
    mounts (nobody else writes there); elsewhere the state cannot say ("")."""
    return USER if any(path.startswith(mount + "/") for mount in MOUNTS) else ""


def bash_error(line: int, text: str) -> str:
    """A message of bash itself (a builtin, a redirection). The channel's shell runs each
    command through `eval` in a function it defined on the second line of its input, so
    bash names the source `main` and counts the command's first line as line 2."""
    return f"main: line {line + 2}: {text}\n"
