"""Shared words of the shell classifier: argument helpers, path kinds, the rule type."""

from __future__ import annotations

import re
from collections.abc import Callable

from policies.safety.shell_commands import DYNAMIC, SimpleCommand
from policies.safety.verdict import SafetyClass, SafetyVerdict

SAFE, SIDE, DESTRUCTIVE = SafetyClass.SAFE, SafetyClass.SIDE_EFFECT, SafetyClass.DESTRUCTIVE

# A program's rule: (class, why) for its arguments, or None to fall back to the defaults.
# (class, why) of one command, or (class, why, False) when the rule could not see
# what runs (the verdict is then not analysed); None: the rule has no opinion.
Rule = Callable[[str, tuple[str, ...], SimpleCommand], tuple[SafetyClass, str] | tuple[SafetyClass, str, bool] | None]

_DOWNLOADERS = re.compile(
    r"(?:^|[\s/(|;&$])(curl|wget|fetch|aria2c|http|xh|lwp-download|Invoke-WebRequest|iwr)(?:\s|$)"
)
_SYSTEM_DIRS = (
    "/etc",
    "/boot",
    "/dev",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/var/lib",
    "/proc",
    "/sys",
    "/root",
    "/var/spool/cron",
)
_HARMLESS_DEVICES = (
    "/dev/null",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/zero",
    "/dev/fd/",
    "/dev/shm/",
    "/dev/random",
    "/dev/urandom",
    "/proc/self/fd/",
)


def verdict(cls: SafetyClass, reason: str, *, analysed: bool = True) -> SafetyVerdict:
    return SafetyVerdict(cls, reason, analysed=analysed)


def short_flags(args: tuple[str, ...]) -> str:
    return "".join(a[1:] for a in args if a.startswith("-") and not a.startswith("--") and len(a) > 1)


def operands(args: tuple[str, ...]) -> list[str]:
    return [a for a in args if not a.startswith("-") or a == "-"]


def is_system_path(path: str) -> bool:
    path = path.replace(DYNAMIC, "$").strip()
    if not path.startswith("/"):
        return False
    if path.startswith(_HARMLESS_DEVICES) or path in _HARMLESS_DEVICES:
        return False
    if path.rstrip("/*.") == "" or "sudoers" in path:
        return True
    return any(path == d or path.startswith(d + "/") or path.startswith(d + "*") for d in _SYSTEM_DIRS)


def is_harmless_target(path: str) -> bool:
    """/dev/null, the standard streams, a terminal: writing there changes nothing."""
    return path in _HARMLESS_DEVICES or path.startswith(_HARMLESS_DEVICES)


def is_device(path: str) -> bool:
    return path.startswith("/dev/") and not path.startswith(_HARMLESS_DEVICES)


def downloads(text: str) -> bool:
    return _DOWNLOADERS.search(text.replace(DYNAMIC, "$")) is not None
