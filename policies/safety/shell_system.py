"""What system administration commands do: signalling processes, stopping the
machine or its services, crontabs, accounts, firewall rules, the clock, mounts.
`SYSTEM_RULES` maps each program to its rule (see `shell_args.Rule`)."""

from __future__ import annotations

from policies.safety.shell_args import DESTRUCTIVE, SAFE, SIDE, Rule, operands, short_flags


def _kill(name, args, cmd):
    if name in ("killall5",):
        return DESTRUCTIVE, "killall5 signals every process"
    targets = list(args)
    if targets[:1] in (["-s"], ["-n"]):
        targets = targets[2:]
    elif len(targets) > 1 and targets[0].startswith("-") and targets[0] != "--":
        targets = targets[1:]  # the signal: -9, -KILL, -SIGTERM
    if targets[:1] == ["--"]:
        targets = targets[1:]
    if name == "kill" and any(t in ("1", "-1") for t in targets):
        return DESTRUCTIVE, "kill of init (pid 1) or of every process (-1)"
    if name in ("pkill", "killall") and any(t in ("init", "systemd", "-u", "sshd") for t in args):
        return DESTRUCTIVE, f"{name} of system processes"
    return SIDE, f"{name} signals processes"


def _power(name, args, cmd):
    if name in ("init", "telinit") and not any(a in ("0", "6", "1", "s", "S") for a in args):
        return None
    if name == "shutdown" and "-c" in args:
        return SIDE, "shutdown -c cancels a pending shutdown"
    return DESTRUCTIVE, f"{name} stops or restarts the machine"


_SERVICE_STOP = frozenset(
    "stop disable mask kill isolate poweroff reboot halt kexec emergency rescue suspend hibernate".split()
)
_SERVICE_READ = frozenset(
    """status show list-units list-unit-files list-timers list-sockets is-active is-enabled is-failed cat help --version
    get-default list-dependencies""".split()
)


def _systemctl(name, args, cmd):
    words = operands(args)
    if name == "service":
        action = words[1] if len(words) > 1 else (words[0] if words and words[0].startswith("--status") else "")
        if action in ("stop", "disable"):
            return DESTRUCTIVE, f"service {words[0]} {action} stops a service"
        return (
            (SAFE, "service status")
            if action in ("status", "") or "--status-all" in args
            else (SIDE, f"service {action} changes a service")
        )
    verb = words[0] if words else ""
    if verb in _SERVICE_STOP:
        return DESTRUCTIVE, f"{name} {verb} stops or disables services"
    if verb in _SERVICE_READ or not verb:
        return SAFE, f"{name} {verb or 'list'} only reads"
    return SIDE, f"{name} {verb} changes services"


def _crontab(name, args, cmd):
    flags = short_flags(args)
    if "r" in flags:
        return DESTRUCTIVE, "crontab -r removes the crontab"
    if "l" in flags:
        return SAFE, "crontab -l lists"
    return SIDE, "crontab replaces or edits the crontab"


def _user_admin(name, args, cmd):
    if name in ("userdel", "deluser", "groupdel", "delgroup"):
        return DESTRUCTIVE, f"{name} deletes accounts"
    return SIDE, f"{name} changes accounts"


def _firewall(name, args, cmd):
    flags = short_flags(args)
    if "F" in flags or "X" in flags or "--flush" in args or ("flush" in args and "ruleset" in args):
        return DESTRUCTIVE, f"{name} flushes firewall rules"
    if "L" in flags or "S" in flags or "--list" in args or (args[:1] == ("list",)):
        return SAFE, f"{name} lists rules"
    return SIDE, f"{name} changes firewall rules"


def _misc_side(message: str) -> Rule:
    return lambda name, args, cmd: (SIDE, message.format(name=name))


def _date(name, args, cmd):
    return (
        (SIDE, "date -s sets the clock")
        if "-s" in args or any(a.startswith("--set") for a in args)
        else (SAFE, "date prints the time")
    )


def _hostname(name, args, cmd):
    return (SAFE, "hostname prints") if not operands(args) else (SIDE, "hostname renames the machine")


SYSTEM_RULES: dict[str, Rule] = {
    **dict.fromkeys(("kill", "pkill", "killall", "killall5"), _kill),
    **dict.fromkeys(("shutdown", "reboot", "halt", "poweroff", "init", "telinit"), _power),
    **dict.fromkeys(("systemctl", "service"), _systemctl),
    "crontab": _crontab,
    **dict.fromkeys(
        ("userdel", "deluser", "groupdel", "delgroup", "useradd", "usermod", "passwd", "chpasswd"), _user_admin
    ),
    **dict.fromkeys(("iptables", "ip6tables", "nft", "ufw"), _firewall),
    "date": _date,
    "hostname": _hostname,
    "journalctl": lambda n, a, c: (
        (SIDE, "journalctl deletes or rotates journals")
        if any(x.startswith(("--vacuum", "--rotate", "--flush")) for x in a)
        else (SAFE, "journalctl reads logs")
    ),
    "mount": lambda n, a, c: (SAFE, "mount lists mounts") if not a else (SIDE, "mount changes mounts"),
    "umount": _misc_side("{name} unmounts filesystems"),
    "swapoff": _misc_side("{name} disables swap"),
}
