"""Commands that run other commands: `sudo`, `env`, `timeout`, `xargs`, `find -exec`
run an inner argv; `bash -c`, `eval`, `su -c`, `ssh host cmd` run a script, which
the parser parses in turn. Pure functions of an argv, no parse tree."""

from __future__ import annotations

from policies.safety.shell_commands import program_name

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "busybox sh", "fish"})

# Options that take a value, per wrapper (so the value is not taken for the program).
_SUDO_VALUE_OPTIONS = frozenset("ugCDhprtUTg") | {
    "--user",
    "--group",
    "--host",
    "--prompt",
    "--role",
    "--type",
    "--chdir",
    "--close-from",
    "--other-user",
}
_TIMEOUT_VALUE_OPTIONS = {"-s", "--signal", "-k", "--kill-after"}
_XARGS_VALUE_OPTIONS = {
    "-I",
    "-L",
    "-n",
    "-P",
    "-s",
    "-d",
    "-E",
    "-a",
    "--max-args",
    "--max-procs",
    "--delimiter",
    "--arg-file",
    "--replace",
}


def unwrap(argv: tuple[str, ...]) -> tuple[str, tuple[str, ...] | str] | None:
    """(wrapper, what it runs) for a wrapper command: the inner argv, or a script to
    parse (`bash -c`, `eval`, `su -c`, `ssh host cmd`); None for any other command."""
    if not argv:
        return None
    name = program_name(argv[0])
    rest = argv[1:]
    if name in ("sudo", "doas", "run0"):
        return name, _after_options(rest, value_options=_SUDO_VALUE_OPTIONS, short_values=True)
    if name == "env":
        for j, arg in enumerate(rest):
            if arg in ("-S", "--split-string") and j + 1 < len(rest):
                return "env -S", " ".join(rest[j + 1 :])
        i = 0
        while i < len(rest) and (rest[i].startswith("-") or "=" in rest[i]):
            i += 2 if rest[i] in ("-u", "--unset", "-C", "--chdir", "-S") else 1
        return name, rest[i:]
    if name == "command" and any(a in ("-v", "-V") for a in rest[:2]):
        return None  # `command -v git` looks a program up, it does not run it
    if name in (
        "nice",
        "ionice",
        "nohup",
        "time",
        "command",
        "builtin",
        "exec",
        "setsid",
        "stdbuf",
        "chronic",
        "unbuffer",
        "caffeinate",
    ):
        return name, _after_options(
            rest, value_options={"-n", "-c", "--adjustment", "-i", "-o", "-e", "-p"}, short_values=False
        )
    if name == "timeout":
        after = _after_options(rest, value_options=_TIMEOUT_VALUE_OPTIONS, short_values=False)
        return name, after[1:]  # the duration
    if name == "xargs":
        return name, _after_options(rest, value_options=_XARGS_VALUE_OPTIONS, short_values=False)
    if name == "watch":
        after = _after_options(rest, value_options={"-n", "--interval", "-d"}, short_values=False)
        return (name, " ".join(after)) if len(after) == 1 else (name, after)
    if name == "busybox" and rest and rest[0] not in ("sh", "ash", "bash"):
        return name, rest  # busybox rm -rf …: the applet runs
    if name in _SHELLS or (name == "busybox" and rest[:1] in (("sh",), ("ash",), ("bash",))):
        if name == "busybox":
            rest = rest[1:]
        for i, arg in enumerate(rest):
            if arg == "--":
                break
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
                return f"{name} -c", rest[i + 1] if i + 1 < len(rest) else ""
            if not arg.startswith("-"):
                break
        return None
    if name == "eval":
        return name, " ".join(rest)
    if name in ("su", "runuser"):
        for i, arg in enumerate(rest):
            if arg in ("-c", "--command") and i + 1 < len(rest):
                return f"{name} -c", rest[i + 1]
        return None
    if name == "ssh":
        after = _after_options(rest, value_options=set("bcDEeFIiJLlmOopQRSWw"), short_values=True)
        return ("ssh", " ".join(after[1:])) if len(after) > 1 else None
    if name == "find":
        for i, arg in enumerate(rest):
            if arg in ("-exec", "-execdir", "-ok", "-okdir"):
                end = next((j for j in range(i + 1, len(rest)) if rest[j] in (";", "+", "\\;")), len(rest))
                return f"find {arg}", rest[i + 1 : end]
        return None
    return None


def _after_options(
    args: tuple[str, ...], *, value_options: set[str] | frozenset[str], short_values: bool
) -> tuple[str, ...]:
    """The arguments after a wrapper's own options (and their values)."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return args[i + 1 :]
        if not arg.startswith("-") or arg == "-":
            break
        if arg in value_options or (short_values and len(arg) == 2 and arg[1] in value_options):
            i += 2
            continue
        i += 1
    return args[i:]


def is_shell(name: str) -> bool:
    return name in _SHELLS
